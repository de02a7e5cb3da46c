package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A second `ecagent run` on the cycle.shm of a running agent exits 4
// naming the first one, and the first runs on in OP: before the lock, the
// second attached to the first one's cycle process and took its share of
// the segment's rings.
func TestRunRefusesASecondAgentOnItsSegment(t *testing.T) {
	shmPath := fmt.Sprintf("/dev/shm/ecagent-cmdtest-%d-second.shm", os.Getpid())
	first, lines, stderr := startRunInOP(t, shmPath)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // one that attached would run on
	defer cancel()
	second := exec.CommandContext(ctx, os.Args[0], "run", "--metrics.listen", "", "--cycle.shm", shmPath, "--log.level", "warn")
	second.Env = first.Env
	second.Cancel = func() error { return second.Process.Signal(syscall.SIGTERM) } // it stops as an agent does, leaving the cycle
	out, err := second.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInUse {
		t.Fatalf("second agent: %v, want exit %d\n%s", err, exitInUse, out)
	}
	if want := "pid " + strconv.Itoa(first.Process.Pid); !strings.Contains(string(out), want) {
		t.Errorf("second agent's error does not name the first (%s): %s", want, out)
	}
	// The first runs on: its status lines keep coming, and three in a
	// row are in OP within 30 s of them (one every 100 ms). A loaded host
	// can starve the simulator, and the first agent then says so (lost
	// frames, LINK-DOWN) and recovers: what the second must not do is
	// stop it or take its segment.
	inOP, last := 0, ""
	for n := 0; inOP < 3; n++ {
		if !lines.Scan() {
			t.Fatalf("first agent stopped after the second: last status %q\n%s", last, stderr.String())
		}
		if last = lines.Text(); strings.Contains(last, " OP ") {
			inOP++
		} else {
			inOP = 0
		}
		if n == 300 {
			t.Fatalf("first agent not in OP for three status lines in a row after the second: last %q\n%s", last, stderr.String())
		}
	}
}

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
	// The first runs on: status lines in OP keep coming.
	for range 3 {
		if !lines.Scan() || !strings.Contains(lines.Text(), " OP ") {
			t.Fatalf("first agent after the second: %q\n%s", lines.Text(), stderr.String())
		}
	}
}

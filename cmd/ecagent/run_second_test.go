package main

import (
	"bufio"
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

	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// A second `ecagent run` on the cycle.shm of a running agent exits 4
// naming the first one, and the first runs on in OP: before the lock, the
// second attached to the first one's cycle process and took its share of
// the segment's rings.
func TestRunRefusesASecondAgentOnItsSegment(t *testing.T) {
	shmPath := fmt.Sprintf("/dev/shm/ecagent-cmdtest-%d-second.shm", os.Getpid())
	first := exec.Command(os.Args[0], "run", "--status.interval", "100ms", "--metrics.listen", "",
		"--cycle.shm", shmPath, "--log.level", "warn")
	first.Env = append(append(os.Environ(), "ECAGENT_TEST_MAIN=1"), cycleEnviron(t)...)
	var stderr testsupport.SyncBuffer
	first.Stderr = &stderr
	first.WaitDelay = 10 * time.Second
	t.Cleanup(func() {
		if first.Process != nil {
			_ = first.Process.Kill()
		}
		cyclereap.Stop(t, shmPath)
		if first.Process != nil {
			_ = first.Wait()
		}
	})
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.Contains(lines.Text(), " OP ") {
		t.Fatalf("no status line in OP: %q\n%s", lines.Text(), stderr.String())
	}

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

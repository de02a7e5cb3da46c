package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// `ecagent run` stopped by SIGINT (Ctrl-C) exits 130, the documented code
// for an interrupt; stopped by SIGTERM, as systemd and Kubernetes stop a
// service, it exits 0: the unit counts anything else as a failure.
func TestRunExitCodeOnSignals(t *testing.T) {
	for _, c := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, exitInterrupted}, {syscall.SIGTERM, exitOK}} {
		t.Run(c.sig.String(), func(t *testing.T) {
			shmPath := fmt.Sprintf("/dev/shm/ecagent-cmdtest-%d-%d.shm", os.Getpid(), int(c.sig))
			cmd, lines, stderr := startRunInOP(t, shmPath)
			go func() {
				for lines.Scan() { // keep the pipe drained until the agent exits
				}
			}()
			if err := cmd.Process.Signal(c.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode() // -1 when a signal killed it
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit %d on %v, want %d\n%s", code, c.sig, c.code, stderr.String())
			}
			for _, p := range []string{shmPath, shmPath + ".agent.lock"} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s left behind", p)
				}
			}
		})
	}
}

// startRunInOP starts `ecagent run` on the default simulated segment with
// the segment at shmPath and a status line every 100 ms, and returns once
// the first status line shows the bus in OP, with the lines that follow
// and the agent's standard error. A test that fails before it stops the
// agent kills it at its end, and then its cycle process, which a kill
// leaves running (holding the agent's stderr: Wait would wait for it).
func startRunInOP(t *testing.T, shmPath string) (*exec.Cmd, *bufio.Scanner, *testsupport.SyncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "run", "--status.interval", "100ms", "--metrics.listen", "",
		"--cycle.shm", shmPath, "--log.level", "warn")
	cmd.Env = append(append(os.Environ(), "ECAGENT_TEST_MAIN=1"), cycleEnviron(t)...)
	stderr := new(testsupport.SyncBuffer)
	cmd.Stderr = stderr
	cmd.WaitDelay = 10 * time.Second
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
		}
		cyclereap.Stop(t, shmPath)
		if cmd.Process != nil {
			_ = cmd.Wait()
		}
	})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || !strings.Contains(lines.Text(), " OP ") {
		t.Fatalf("no status line in OP: %q\n%s", lines.Text(), stderr.String())
	}
	return cmd, lines, stderr
}

package test

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/internal/testsupport"
)

func count(msgs []string, s string) int {
	n := 0
	for _, m := range msgs {
		if m == s {
			n++
		}
	}
	return n
}

// TestAgentNotifiesSystemd runs `ecagent run` (built-in simulated segment)
// as systemd would start the unit — $NOTIFY_SOCKET and a 1 s watchdog — and
// checks the protocol: READY=1 once the cycle runs, WATCHDOG=1 every half
// watchdog period while it runs, none while the cycle process is frozen
// (SIGSTOP: alive, but its heartbeat goes stale), feeding again once it
// runs, and STOPPING=1 on SIGTERM.
func TestAgentNotifiesSystemd(t *testing.T) {
	l := testsupport.NewNotifySocket(t)
	shmPath := fmt.Sprintf("/dev/shm/ecagent-notify-%d.shm", os.Getpid())
	cmd := exec.Command(ecagentBinary(t), "run", "--cycle.shm", shmPath, "--status.interval", "0", "--metrics.listen", "")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "NOTIFY_SOCKET=" + l.Path, "WATCHDOG_USEC=1000000"}
	a := startProcess(t, cmd)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	cyclePID := 0
	t.Cleanup(func() {
		if cyclePID > 0 {
			_ = syscall.Kill(cyclePID, syscall.SIGCONT)
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log())
		}
	})

	ready, before := l.WaitFor(t, "READY=1", 60*time.Second)
	if len(before) != 0 || !strings.Contains(ready, "\nSTATUS=cycling: 7 slaves") {
		t.Errorf("first notification %q (after %q), want READY=1 with the cycle's status", ready, before)
	}
	info, err := process.ReadBusInfo(process.BusInfoPath(shmPath))
	if err != nil {
		t.Fatal(err)
	}
	cyclePID = info.CyclePID

	if got := l.Collect(2 * time.Second); count(got, "WATCHDOG=1") < 3 {
		t.Errorf("while cycling, 2 s brought %q; want WATCHDOG=1 every 0.5 s", got)
	}

	if err := syscall.Kill(cyclePID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	l.Collect(2500 * time.Millisecond) // the heartbeat goes stale after 2 s
	if got := l.Collect(2 * time.Second); count(got, "WATCHDOG=1") != 0 {
		t.Errorf("with the cycle frozen the agent still fed the watchdog: %q", got)
	}
	if err := syscall.Kill(cyclePID, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	l.WaitFor(t, "WATCHDOG=1", 2*time.Second)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopping, _ := l.WaitFor(t, "STOPPING=1", 10*time.Second)
	t.Logf("on SIGTERM: %q", stopping)
	select {
	case <-exited:
	case <-time.After(15 * time.Second):
		t.Fatal("the agent did not exit after SIGTERM")
	}
	if !cmd.ProcessState.Success() {
		t.Errorf("agent exit: %v", cmd.ProcessState)
	}
}

package test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStopWithStrayBrokerClients stops an agent (SIGTERM) while its
// embedded broker has a client that opened a socket and sent half a
// CONNECT: the broker's handler waits on that read with no deadline, and
// an agent stopped like this hung until its watchdog (25 s, exit 1) in one
// CI run. The broker now closes such sockets 1 s into its stop: the agent
// exits 0, well within its stop bound.
func TestStopWithStrayBrokerClients(t *testing.T) {
	path := fmt.Sprintf("/dev/shm/ecagent-stopclients-%d.shm", os.Getpid())
	a := startAgent(t, "--mqtt.embedded", "127.0.0.1:0", "--metrics.listen", "", "--cycle.shm", path, "--status.interval", "0")
	t.Cleanup(func() { _ = a.cmd.Process.Kill(); _ = a.cmd.Wait() })
	addr := a.loggedAddr(t, "embedded MQTT broker", 30*time.Second)
	a.waitLog(t, "cycle started", 30*time.Second)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{0x10, 17, 0, 4}); err != nil { // the start of a CONNECT
		t.Fatal(err)
	}

	start := time.Now()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- a.cmd.Wait() }()
	var werr error
	select {
	case werr = <-exited:
	case <-time.After(20 * time.Second): // the stop bound is 27 s
		t.Fatalf("the agent has not stopped 20 s after SIGTERM:\n%s", a.log())
	}
	took := time.Since(start)
	var exit *exec.ExitError
	if errors.As(werr, &exit) || werr != nil {
		t.Fatalf("agent exit: %v after %v\n%s", werr, took, a.log())
	}
	if strings.Contains(a.log(), "did not stop in time") {
		t.Errorf("the stop watchdog fired:\n%s", a.log())
	}
	t.Logf("stopped in %v", took.Round(time.Millisecond))
}

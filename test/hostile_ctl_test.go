package test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// squatterEnv names the socket path the test binary, run as the squatter,
// takes.
const squatterEnv = "ECAGENT_TEST_SQUATTER"

// squatterMain is what any local user can do where the agent's control
// socket goes: make the directory (when there is none), serve a socket
// there that everyone may use, and answer every request as if it were
// carried out. It prints "ready" once it listens and "request LINE" for
// each request it gets.
func squatterMain(path string) int {
	if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil && !os.IsExist(err) {
		fmt.Println("error:", err)
		return 1
	}
	ln, err := net.Listen("unix", path)
	if err == nil {
		err = os.Chmod(path, 0o777)
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("ready")
	for {
		c, err := ln.Accept()
		if err != nil {
			return 0
		}
		go func() {
			defer c.Close()
			in := bufio.NewScanner(c)
			for in.Scan() {
				fmt.Printf("request %s\n", in.Text())
				answer := `{"result":{"slave":1,"addr":288,"data":"0200"}}`
				if strings.Contains(in.Text(), `"hello"`) {
					answer = `{"result":{"interface":"","slaves":7}}`
				}
				if _, err := io.WriteString(c, answer+"\n"); err != nil {
					return
				}
			}
		}()
	}
}

// startSquatter runs the test binary as user nobody, squatting path, and
// waits until it listens. The lines it printed after "ready" are on the
// channel, which closes when it has ended (stop).
func startSquatter(t *testing.T, path string) (lines <-chan string, stop func()) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "ecagent-squatter")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "squatter")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = "/"
	cmd.Env = []string{squatterEnv + "=" + path}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobodyUID, Gid: nobodyUID, Groups: []uint32{}}}
	ch := testsupport.StartLines(t, cmd)
	stop = func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	select {
	case l := <-ch:
		if l != "ready" {
			t.Fatalf("squatter: %s", l)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the squatter did not start within 20 s")
	}
	return ch, stop
}

// TestSquattedMaintenanceSocket: another user (nobody, a real process of
// another uid) took the place of the agent's control socket beside the
// segment in /dev/shm before the agent started, and serves a forger there.
// The agent runs its cycle on, says on every channel that it refused to
// serve maintenance there (the log, a note on MQTT …/events,
// ecagent_maintenance_socket_up 0), and
// a maintenance write run as root refuses the squatter's socket with an
// error instead of sending it the write and printing its forged answer.
func TestSquattedMaintenanceSocket(t *testing.T) {
	needRoot(t)
	shm := fmt.Sprintf("/dev/shm/ecagent-squat-%d.shm", os.Getpid())
	sock := maintenance.SocketPath(shm)
	t.Cleanup(func() { _ = os.Remove(sock); _ = os.Remove(filepath.Dir(sock)) })
	lines, stopSquatter := startSquatter(t, sock)

	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/edge"
	sub := mqtttest.MosquittoSub(t, broker.Port, root+"/events")
	addr := testsupport.FreeAddr(t)
	a := startAgent(t, "--cycle.shm", shm, "--status.interval", "300ms", "--metrics.listen", addr,
		"--site", "plant", "--host", "edge", "--mqtt.broker", broker.URL(),
		"--bus.timeout", "100ms") // a loaded CI host answers late
	t.Cleanup(func() { stopAgent(t, a); cyclereap.Stop(t, shm) })
	a.waitLog(t, "cycle started", 30*time.Second)
	// Not waitLog: the test goes on to the client when this fails.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(a.log(), "the cycle process refused to serve its maintenance socket"); {
		if time.Now().After(deadline) {
			t.Errorf("the agent's log does not say that maintenance is refused, at error level:\n%s", a.log())
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if log := a.log(); !strings.Contains(log, fmt.Sprintf("belongs to user %d", nobodyUID)) {
		t.Errorf("the agent's log does not say whose the socket's place is:\n%s", log)
	}
	a.waitStatus(t, " OP ", 10*time.Second) // the cycle runs on in OP
	up := scrape(t, addr)["ecagent_maintenance_socket_up"]
	if up == nil || len(up.Metric) != 1 || up.Metric[0].GetGauge().GetValue() != 0 {
		t.Errorf("ecagent_maintenance_socket_up: %v, want one series at 0", up)
	}

	out, code := runWithin(t, 20*time.Second, "reg", "write", "1", "0x0120", "0x0002", "--write", "--cycle.shm", shm)
	t.Logf("ecagent reg write: exit %d\n%s", code, out)
	if code == 0 || !strings.Contains(out, fmt.Sprintf("user %d", nobodyUID)) {
		t.Errorf("reg write through the squatted socket: exit %d, want a refusal naming user %d:\n%s", code, nobodyUID, out)
	}
	if t.Failed() {
		t.Logf("agent log:\n%s", a.log())
	}
	stopSquatter() // its output ends: every request it got is on the channel
	for l := range lines {
		t.Errorf("the squatter got %q", l)
	}
	if !strings.Contains(a.out(), " OP ") {
		t.Errorf("agent status:\n%s", a.out())
	}
	// Last: waitFrom ends the test when the event does not come.
	sub.WaitFrom(t, 0, "/events", 10*time.Second, func(m mqtttest.Message) bool {
		return strings.Contains(string(m.Payload), `"kind":"note"`) && strings.Contains(string(m.Payload), "maintenance socket refused")
	})
}

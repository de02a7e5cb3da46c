package test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// buildBinaries builds cmd/ecagent and cmd/ecagent-cycle once per test
// run, side by side in one directory, as they are installed: the agent
// finds its cycle program beside itself. It sets binary, the path of
// ecagent, or buildErr.
func buildBinaries() {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ecagent-test")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "ecagent")
		// Built as the release image is (CGO_ENABLED=0): with cgo, every
		// thread's C stack counts as locked memory and the cycle process
		// locks only what it touched at start, and says so.
		build := exec.Command("go", "build", "-o", dir+"/", "../cmd/ecagent", "../cmd/ecagent-cycle")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
}

// ecagentBinary builds cmd/ecagent and cmd/ecagent-cycle once per test
// run and returns the path of ecagent; ecagent-cycle is beside it
// (cycleBinary).
func ecagentBinary(t *testing.T) string {
	t.Helper()
	buildBinaries()
	if buildErr != nil {
		t.Fatalf("building ecagent: %v", buildErr)
	}
	return binary
}

// cycleBinary returns the path of the ecagent-cycle built beside
// ecagentBinary.
func cycleBinary(t *testing.T) string {
	t.Helper()
	return filepath.Join(filepath.Dir(ecagentBinary(t)), "ecagent-cycle")
}

// startSim runs `ecagent sim` inside the wire's namespace until the test
// ends, with extra flags (fault injection) if given; it returns the
// process, for signals.
func startSim(t *testing.T, w wire, devices string, extra ...string) *exec.Cmd {
	t.Helper()
	bin := ecagentBinary(t)
	var stderr testsupport.SyncBuffer // written by exec's copying goroutine, read here
	args := append([]string{"netns", "exec", w.NS, bin, "sim", "--iface", w.SimEnd, "--devices", devices, "--priority", "70"}, extra...)
	cmd := exec.Command("ip", args...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopAtCleanup(t, cmd, "ecagent sim", stderr.String)
	// The simulator logs each device before it serves.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "simulated device") {
		if time.Now().After(deadline) {
			t.Fatalf("ecagent sim did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd
}

func TestScanCommandOverVeth(t *testing.T) {
	w := newWire(t, "scn")
	startSim(t, w, strings.Join(referenceSet, ","))
	out, err := exec.Command(ecagentBinary(t), "scan", "--iface", w.MasterEnd, "--expected-slaves", "7").Output()
	if err != nil {
		t.Fatalf("ecagent scan: %v\n%s", err, out)
	}
	t.Logf("ecagent scan --iface %s:\n%s", w.MasterEnd, out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 9 || lines[8] != "7 slaves" {
		t.Fatalf("want a header, 7 rows and a count, got:\n%s", out)
	}
	for i, model := range referenceSet {
		row := lines[i+1]
		if !strings.Contains(row, model) || !strings.Contains(row, "0x00000002") {
			t.Errorf("row %d %q does not show Beckhoff %s", i, row, model)
		}
	}
	// A wrong expectation is exit code 3, with both counts named.
	cmd := exec.Command(ecagentBinary(t), "scan", "--iface", w.MasterEnd, "--expected-slaves", "5")
	msg, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(string(msg), "5") || !strings.Contains(string(msg), "7") {
		t.Errorf("scan with 5 expected: %v\n%s", err, msg)
	}
}

// TestRunCommandOverVeth runs `ecagent run` against `ecagent sim` and
// reads its status lines. Nothing it opens is fixed: the metrics endpoint
// listens on a port the kernel picks (the agent logs which) and the shared
// memory is this test's own, so another agent on the host cannot make it
// fail.
func TestRunCommandOverVeth(t *testing.T) {
	w := newWire(t, "run")
	startSim(t, w, strings.Join(referenceSet, ","))
	shm := fmt.Sprintf("/dev/shm/ecagent-run-%d.shm", os.Getpid())
	cmd := exec.Command(ecagentBinary(t), "run", "--bus.interface", w.MasterEnd,
		"--cycle.shm", shm, "--metrics.listen", "127.0.0.1:0",
		"--status.interval", "300ms", "--bus.expectedslaves", "7")
	a := startProcess(t, cmd)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a no-op once it stopped
		cyclereap.Stop(t, shm)
	})

	addr := a.loggedAddr(t, "metrics endpoint", 20*time.Second)
	if resp, err := http.Get("http://" + addr + "/metrics"); err != nil {
		t.Errorf("the metrics endpoint the agent logged, %s: %v", addr, err)
	} else {
		resp.Body.Close()
	}
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(a.out(), "\n") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 status lines after 20 s:\n%s\nlog:\n%s", a.out(), a.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if code := exitCode(err); code != 130 {
			t.Fatalf("ecagent run after SIGINT: exit code %d (%v), want 130\n%s", code, err, a.log())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("ecagent run did not stop within 20 s of SIGINT:\n%s", a.log())
	}
	lines := strings.Split(strings.TrimSpace(a.out()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], " OP  slaves 7 ") || !strings.Contains(lines[1], "wkc 8/8") {
		t.Errorf("status lines:\n%s\nlog:\n%s", a.out(), a.log())
	}
}

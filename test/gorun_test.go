package test

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// TestRunWithoutCycleProgram is `go run ./cmd/ecagent run`, the first
// command a Go user types: ecagent alone in a directory, no ecagent-cycle
// beside it or in $PATH, no configuration. The agent runs the cycle
// process from its own executable (`ecagent cycle`, said once at warn),
// brings the default simulated segment to OP, serves /metrics and
// /readyz, stops on SIGTERM with 0, and its cycle process allocated
// nothing in cyclic operation when it ran alone (no recovery episode, no
// maintenance request, which allocate on their own goroutines; the hidden
// mode's allocations are held to 0 whatever the host does by
// TestCycleProcessAllocatesNothing). Once as a binary built into an empty
// folder; once through `go run` itself, in a process group of its own
// (the cleanup ends both), where SIGTERM goes to the agent, the cycle
// process's parent, and go run passes its exit code on.
func TestRunWithoutCycleProgram(t *testing.T) {
	args := func(shmPath string) []string {
		return []string{"run", "--cycle.shm", shmPath, "--metrics.listen", "127.0.0.1:0", "--mqtt.enabled=false", "--status.interval", "0"}
	}
	t.Run("binary", func(t *testing.T) {
		dir := t.TempDir()
		bin := filepath.Join(dir, "ecagent")
		if out, err := exec.Command("go", "build", "-o", bin, "../cmd/ecagent").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		shmPath := filepath.Join(t.TempDir(), "ecagent.shm")
		cmd := exec.Command(bin, args(shmPath)...)
		cmd.Env = []string{"PATH=" + t.TempDir()} // nothing in it: no ecagent-cycle
		runAlone(t, cmd, shmPath)
	})
	t.Run("go run", func(t *testing.T) {
		goBin, err := exec.LookPath("go")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Dir(goBin) // go and nothing of ecagent's
		if p, err := exec.LookPath(filepath.Join(path, "ecagent-cycle")); err == nil {
			t.Skipf("%s is beside go: the agent would run it", p)
		}
		shmPath := filepath.Join(t.TempDir(), "ecagent.shm")
		cmd := exec.Command(goBin, append([]string{"run", "./cmd/ecagent"}, args(shmPath)...)...)
		cmd.Dir = ".."
		cmd.Env = append(withoutPath(os.Environ()), "PATH="+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		runAlone(t, cmd, shmPath)
	})
}

// withoutPath is env without its PATH.
func withoutPath(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") {
			out = append(out, kv)
		}
	}
	return out
}

// runAlone starts cmd, an `ecagent run` on the default simulated segment
// at shmPath that finds no ecagent-cycle, waits until the segment is in
// OP, ready, and has run a second of cycles, stops the agent (cmd or, for
// go run, its child) with SIGTERM and checks what the agent and its cycle
// process said.
func runAlone(t *testing.T, cmd *exec.Cmd, shmPath string) {
	a := startWithFiles(t, cmd)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.SysProcAttr != nil && cmd.SysProcAttr.Setpgid {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // go run and its program; a no-op once stopped
		}
		_ = cmd.Process.Kill()
		cyclereap.Stop(t, shmPath)
	})

	// go run compiles first: the deadline is a loaded host's link time.
	var addr string
	endpoint := regexp.MustCompile(`msg="metrics endpoint" addr=(\S+)`)
	for deadline := time.Now().Add(5 * time.Minute); addr == ""; {
		if m := endpoint.FindStringSubmatch(a.log()); m != nil {
			addr = m[1]
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("ecagent run exited before serving /metrics: exit code %d (%v)\n%s", exitCode(err), err, a.log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("ecagent run served no /metrics within 5 minutes:\n%s", a.log())
		}
	}
	state := func() (up int, cycles float64) {
		fams := scrape(t, addr)
		for _, m := range fams["ecagent_slave_up"].GetMetric() {
			if m.GetGauge().GetValue() == 1 {
				up++
			}
		}
		for _, m := range fams["ecagent_cycles_total"].GetMetric() {
			cycles += m.GetCounter().GetValue()
		}
		return up, cycles
	}
	ready := func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	// A second of cycles (1 ms) before the stop, so that the cycle
	// process reaches its steady state and counts its allocations.
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		up, cycles := state()
		if up == 7 && cycles >= 1000 && ready() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("60 s after start: %d of 7 slaves up, %v cycles, ready %v\n%s", up, cycles, ready(), a.log())
		}
	}
	log := a.log()
	if n := strings.Count(log, "ecagent-cycle is neither beside ecagent nor in $PATH"); n != 1 {
		t.Errorf("the fallback to the hidden cycle mode was said %d times, want once:\n%s", n, log)
	}
	m := regexp.MustCompile(`msg="cycle process started" pid=(\d+)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("no cycle process started:\n%s", log)
	}
	cmdline, err := os.ReadFile("/proc/" + m[1] + "/cmdline")
	argv := strings.Split(string(cmdline), "\x00")
	if err != nil || len(argv) < 4 || filepath.Base(argv[0]) != "ecagent" || argv[1] != "cycle" || argv[2] != "--shm" || argv[3] != shmPath {
		t.Errorf("the cycle process runs %q (%v), want …/ecagent cycle --shm %s …", argv, err, shmPath)
	}

	agent, err := parentPID(m[1])
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(agent, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if code := exitCode(err); code != 0 {
			t.Fatalf("ecagent run after the stop: exit code %d (%v), want 0\n%s", code, err, a.log())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("ecagent run did not stop within 30 s:\n%s", a.log())
	}
	stopped := regexp.MustCompile(`msg="cycle process stopped" process=cycle cycles=(\d+) mallocs_in_cycle=(\d+) gc_in_cycle=(\d+) ` +
		`recovery_episodes=(\d+) maintenance_requests=(\d+)`).FindStringSubmatch(a.log())
	if stopped == nil {
		t.Fatalf("the cycle process did not say how it stopped:\n%s", a.log())
	}
	cycles, _ := strconv.Atoi(stopped[1])
	switch {
	case cycles < 1000 || stopped[3] != "0":
		t.Errorf("the cycle process ran %s cycles with %s garbage collections:\n%s", stopped[1], stopped[3], a.log())
	case stopped[4] == "0" && stopped[5] == "0" && stopped[2] != "0":
		t.Errorf("the cycle process allocated %s times in %s cycles with no recovery nor maintenance:\n%s", stopped[2], stopped[1], a.log())
	case stopped[4] != "0" || stopped[5] != "0":
		t.Logf("%s allocations in %s cycles, with %s recovery episodes and %s maintenance requests", stopped[2], stopped[1], stopped[4], stopped[5])
	}
}

// parentPID is the parent of the process pid, from /proc.
func parentPID(pid string) (int, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid …; comm may hold spaces and parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%s/stat: %q", pid, b)
	}
	return strconv.Atoi(f[1])
}

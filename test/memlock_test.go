package test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/shm"
)

// TestCycleUnderSmallMemlockLimit runs the cycle process for 60 s as an
// unprivileged user with CAP_NET_RAW and CAP_SYS_NICE but not
// CAP_IPC_LOCK, under RLIMIT_MEMLOCK 8 MiB (an unprivileged container's
// default), with the default link (auto): without CAP_BPF it must fall
// back from xdp to mmap and say so, run every cycle without dying ("cannot
// map pages in arena address space" was seen once), and never show more
// locked memory than the limit: VmLck is sampled every 100 ms. The binary
// is built as the other tests build it, with cgo where the host has a C
// compiler: its threads' 8 MiB C stacks counted in full in VmLck
// (144–360 MiB with CAP_IPC_LOCK, where no limit stops them).
func TestCycleUnderSmallMemlockLimit(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"setpriv", "prlimit"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian package util-linux)", tool)
		}
	}
	const limit = 8 << 20
	const cycles = 60_000
	w := newWire(t, "mlk")
	startSim(t, w, strings.Join(referenceSet, ","))
	bin := filepath.Join(filepath.Dir(binaryForAnyUser(t)), "ecagent-cycle")
	dir, err := os.MkdirTemp("", "ecagent-memlock")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("/dev/shm", fmt.Sprintf("ecagent-memlock-%d.shm", os.Getpid()))
	l := shm.DefaultLayout()
	l.Period = time.Millisecond
	seg, err := shm.Create(path, l)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = seg.Close()
		_ = os.Remove(path)
		_ = os.Remove(process.BusInfoPath(path))
		_ = os.RemoveAll(path + ".d")
	})
	if err := os.Chown(path, unprivilegedUID, unprivilegedUID); err != nil {
		t.Fatal(err)
	}
	cfg := process.Default()
	cfg.Bus.Interface, cfg.Bus.ExpectedSlaves = w.MasterEnd, 7
	cfg.Cycle.SHM = path
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "cycle.json")
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	caps := capsForSetpriv([]string{"CAP_NET_RAW", "CAP_SYS_NICE"})
	lim := strconv.Itoa(limit)
	cmd := exec.Command("prlimit", "--memlock="+lim+":"+lim, "--",
		"setpriv", "--reuid", strconv.Itoa(unprivilegedUID), "--regid", strconv.Itoa(unprivilegedUID), "--clear-groups",
		"--inh-caps", caps, "--ambient-caps", caps, "--bounding-set", caps, "--no-new-privs",
		"--", bin, "--config", cfgPath, "--cycles", strconv.Itoa(cycles))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// prlimit execs setpriv, which execs the cycle program: one PID.
	maxLck, maxRSS := 0, 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(3 * time.Minute)
	for waiting := true; waiting; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("the cycle process died: %v\n%s", err, stderr.String())
			}
			waiting = false
		case <-tick.C:
			if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)); err == nil {
				maxLck = max(maxLck, statusField(st, "VmLck"))
				maxRSS = max(maxRSS, statusField(st, "VmRSS"))
			}
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatalf("still running after 3 min:\n%s", stderr.String())
		}
	}
	log := stderr.String()
	if !regexp.MustCompile(`msg="link to the segment".* link=mmap .*passed_over=`).MatchString(log) {
		t.Errorf("want the default link to fall back from xdp to mmap without CAP_BPF, saying so:\n%s", log)
	}
	if m := regexp.MustCompile(`cycles=(\d+) mallocs_in_cycle=(\d+)`).FindStringSubmatch(log); m == nil || m[1] != strconv.Itoa(cycles) {
		t.Errorf("want %d cycles reported:\n%s", cycles, log)
	}
	t.Logf("VmLck at most %d KiB, VmRSS at most %d KiB over %d cycles", maxLck, maxRSS, cycles)
	if maxLck > limit>>10 || maxLck == 0 {
		t.Errorf("VmLck reached %d KiB, want some and at most the limit's %d KiB", maxLck, limit>>10)
	}
}

// statusField reads a "kB" field of a /proc/PID/status text, -1 if absent.
func statusField(status []byte, field string) int {
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return -1
}

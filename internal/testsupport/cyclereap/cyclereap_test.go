package cyclereap

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// fakeEnv makes this test binary a stand-in cycle process: it runs until
// killed ("term": a signal ends it; "deaf": it ignores SIGTERM, as a
// cycle process stuck in a system call seems to).
const fakeEnv = "CYCLEREAP_TEST_FAKE"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeEnv) {
	case "deaf":
		signal.Ignore(syscall.SIGTERM)
		fallthrough
	case "term":
		select {}
	}
	Mark()
	os.Exit(Check(os.Stderr, m.Run(), 5*time.Second))
}

// startFake starts a stand-in cycle process on the segment at shmPath, in
// its own session as the agent starts the real one, with the environment
// env (nil: this process's).
func startFake(t *testing.T, mode, shmPath string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--shm", shmPath, "--config-fd", "3")
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(slices.Clip(env), fakeEnv+"="+mode)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Running once its command line is the one asked for (before exec it
	// is this binary's).
	deadline := time.Now().Add(10 * time.Second)
	for !servesSegment(cmdline(cmd.Process.Pid), shmPath) || (mode == "deaf" && !ignoresSIGTERM(t, cmd.Process.Pid)) {
		if time.Now().After(deadline) {
			t.Fatalf("the stand-in cycle process never ran: %q", cmdline(cmd.Process.Pid))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cmd
}

// A cycle process still bringing its bus up has written no bus
// description: Stop finds it by its segment on its command line (the
// helper it replaces read the PID from the bus description only, and left
// such a process running), and removes the segment's files.
func TestStopFindsTheCycleProcessByItsSegment(t *testing.T) {
	shm := filepath.Join(t.TempDir(), "seg.shm")
	other := startFake(t, "term", shm+"x", nil) // another segment's: left alone
	cmd := startFake(t, "term", shm, nil)
	for _, p := range []string{shm, contract.BusInfoPath(shm)} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := Find(shm); len(got) != 1 || got[0].PID != cmd.Process.Pid {
		t.Fatalf("Find(%s) = %v, want pid %d", shm, got, cmd.Process.Pid)
	}
	Stop(t, shm)
	if Running(cmd.Process.Pid) {
		t.Errorf("the cycle process runs on after Stop")
	}
	if !Running(other.Process.Pid) {
		t.Errorf("Stop ended the cycle process of another segment")
	}
	for _, p := range []string{shm, contract.BusInfoPath(shm)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left behind: %v", p, err)
		}
	}
}

// A cycle process deaf to SIGTERM is killed after the grace.
func TestStopKillsACycleProcessDeafToSIGTERM(t *testing.T) {
	shm := filepath.Join(t.TempDir(), "seg.shm")
	cmd := startFake(t, "deaf", shm, nil)
	start := time.Now()
	Stop(t, shm)
	if Running(cmd.Process.Pid) {
		t.Fatalf("the cycle process runs on after Stop")
	}
	if d := time.Since(start); d < stopGrace {
		t.Errorf("killed after %v, before the grace of %v", d, stopGrace)
	}
}

// Check fails a test binary whose marked cycle process outlives its tests,
// names it and kills it; an unmarked one (another binary's) is not its
// business.
func TestCheckFailsOnASurvivor(t *testing.T) {
	dir := t.TempDir()
	var unmarked []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, ownerEnv+"=") {
			unmarked = append(unmarked, kv)
		}
	}
	foreign := startFake(t, "term", filepath.Join(dir, "foreign.shm"), unmarked)
	var out bytes.Buffer
	if code := Check(&out, 0, 0); code != 0 {
		t.Fatalf("Check with no survivor of ours: %d\n%s", code, out.String())
	}
	ours := startFake(t, "term", filepath.Join(dir, "ours.shm"), nil)
	if code := Check(&out, 0, 100*time.Millisecond); code != 1 {
		t.Fatalf("Check with a survivor: %d, want 1", code)
	}
	if want := fmt.Sprintf("pid %d: %s --shm %s", ours.Process.Pid, os.Args[0], filepath.Join(dir, "ours.shm")); !strings.Contains(out.String(), want) {
		t.Errorf("Check's report does not name the survivor (%q):\n%s", want, out.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for Running(ours.Process.Pid) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if Running(ours.Process.Pid) {
		t.Errorf("Check left the survivor running")
	}
	if !Running(foreign.Process.Pid) {
		t.Errorf("Check killed a cycle process of another binary")
	}
	// Env gives the mark to a command with an environment of its own.
	if env := Env([]string{"PATH=/bin"}); len(env) != 2 || env[1] != fmt.Sprintf("%s=%d", ownerEnv, os.Getpid()) {
		t.Errorf("Env: %q", env)
	}
	if Env(nil) != nil {
		t.Errorf("Env(nil) is not nil: the command would lose this process's environment")
	}
}

// ignoresSIGTERM reports whether pid ignores SIGTERM (SigIgn in its
// status, a mask of signal numbers minus one).
func ignoresSIGTERM(t *testing.T, pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatalf("SigIgn %q: %v", v, err)
			}
			return mask&(1<<(syscall.SIGTERM-1)) != 0
		}
	}
	return false
}

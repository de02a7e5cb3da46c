package capexec

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// TestStartGivesOnlyWhatItKeeps starts a child reading its own
// /proc/self/status with two capabilities kept, as root with every
// capability: the child's sets are those two (its bounding set too),
// with no_new_privs, and every thread of this process still holds what it
// held — among the 20 children started, none left a narrowed thread
// behind, the main thread's included.
func TestStartGivesOnlyWhatItKeeps(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the capabilities to keep from a child")
	}
	self, err := contract.ReadProcessCaps(0)
	if err != nil {
		t.Fatal(err)
	}
	if !self.Effective.Has(contract.CapSysAdmin) || !self.Effective.Has(contract.CapSetPCAP) {
		t.Skipf("needs CAP_SYS_ADMIN and CAP_SETPCAP; this process holds %v", self.Effective)
	}
	keep := contract.CapsOf(contract.CapNetRaw, contract.CapSysNice)
	for i := range 20 {
		var out bytes.Buffer
		cmd := exec.Command("/bin/cat", "/proc/self/status")
		cmd.Stdout = &out
		g, err := Start(cmd, keep)
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if g != (Granted{Caps: keep, Bounding: true, NoNewPrivs: true}) {
			t.Errorf("child %d: granted %+v, want %v and the bounding set narrowed", i, g, keep)
		}
		pc, err := contract.ParseProcessCaps(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		want := contract.ProcessCaps{Effective: keep, Permitted: keep, Inheritable: keep, Ambient: keep, Bounding: keep, NoNewPrivs: true}
		if pc != want {
			t.Errorf("child %d: %+v, want %+v", i, pc, want)
		}
	}
	// A narrowed thread ends after Start returns (the runtime ends it once
	// its goroutine has): wait for the last.
	deadline := time.Now().Add(5 * time.Second)
	for {
		narrowed := narrowedThreads(t, self)
		if len(narrowed) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads of this process (%d) still narrowed: %v", os.Getpid(), narrowed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// narrowedThreads lists the threads of this process that do not hold what
// the process held (self).
func narrowedThreads(t *testing.T, self contract.ProcessCaps) []string {
	t.Helper()
	tasks, err := filepath.Glob("/proc/self/task/*/status")
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads: %v %v", tasks, err)
	}
	var narrowed []string
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue // ended meanwhile
		}
		pc, err := contract.ParseProcessCaps(b)
		if err != nil {
			t.Fatal(err)
		}
		if pc != self {
			narrowed = append(narrowed, fmt.Sprintf("%s: %+v", filepath.Base(filepath.Dir(task)), pc))
		}
	}
	return narrowed
}

// TestStartKeepsOnlyWhatItHolds: a capability asked for that the process
// does not hold is not given, and an error of the program's start is
// Start's.
func TestStartKeepsOnlyWhatItHolds(t *testing.T) {
	self, err := contract.ReadProcessCaps(0)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command("/bin/cat", "/proc/self/status")
	cmd.Stdout = &out
	keep := contract.CapsOf(contract.CapNetRaw, contract.CapBPF, 40)
	g, err := Start(cmd, keep)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	pc, err := contract.ParseProcessCaps(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if want := keep & self.Permitted; g.Caps != want || pc.Effective != want || pc.Permitted != want || !pc.NoNewPrivs {
		t.Errorf("granted %v, child %+v; want %v", g.Caps, pc, want)
	}
	if _, err := Start(exec.Command(filepath.Join(t.TempDir(), "missing")), keep); err == nil {
		t.Error("no error starting a missing program")
	}
}

package rt

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestDisableTHP(t *testing.T) {
	// The setting is the process's; the test process can keep it.
	if err := DisableTHP(); err != nil {
		t.Fatal(err)
	}
	v, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
	if err != nil || v != 1 {
		t.Errorf("PR_GET_THP_DISABLE = %d, %v; want 1", v, err)
	}
}

// TestAvoidCore: every thread of the process, those started before the
// call and after it, leaves the core; GOMAXPROCS stays.
func TestAvoidCore(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	if orig.Count() < 2 {
		t.Skipf("the test process has %d CPU; AvoidCore needs another to move to", orig.Count())
	}
	core := -1
	for c := range 1024 {
		if orig.IsSet(c) {
			core = c // the last allowed one
		}
	}
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		if err := setThreadsAffinity(&orig); err != nil {
			t.Error(err)
		}
		runtime.GOMAXPROCS(procs)
	})
	if err := AvoidCore(core); err != nil {
		t.Fatal(err)
	}
	// A thread started after the call: a goroutine locked to a thread of
	// its own while the others are busy in system calls is the closest
	// a test gets; whichever thread it gets must be off the core too.
	lockedThread(t)
	for _, tid := range threadIDs(t) {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &set); err != nil {
			continue // ended meanwhile
		}
		if set.IsSet(core) || set.Count() != orig.Count()-1 {
			t.Errorf("thread %d: %d CPUs, CPU %d set %v; want every CPU but %d", tid, set.Count(), core, set.IsSet(core), core)
		}
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after, want %d", got, procs)
	}
	if err := AvoidCore(core); err != nil {
		t.Errorf("a second call: %v", err)
	}
	if got, want := OneCPU(), orig.Count() == 2; got != want {
		t.Errorf("OneCPU = %v with %d CPUs", got, orig.Count()-1)
	}
	var only unix.CPUSet
	only.Set(core)
	if err := setThreadsAffinity(&only); err != nil {
		t.Fatal(err)
	}
	if !OneCPU() {
		t.Error("not OneCPU with one")
	}
	if err := AvoidCore(core); !errors.Is(err, errOnlyCore) {
		t.Errorf("AvoidCore of the process's only CPU: %v, want errOnlyCore", err)
	}
}

// TestProcessFIFO: every thread of the process, those started before the
// call and after it, runs SCHED_FIFO at the priority.
func TestProcessFIFO(t *testing.T) {
	normal := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	t.Cleanup(func() {
		if err := eachThread(func(tid int) error { return unix.SchedSetAttr(tid, &normal, 0) }); err != nil {
			t.Error(err)
		}
	})
	if err := ProcessFIFO(0); err == nil {
		t.Error("priority 0 accepted")
	}
	const prio = 1 // the lowest: the test process holds it for a moment only
	if err := ProcessFIFO(prio); err != nil {
		if errors.Is(err, unix.EPERM) {
			t.Skipf("no privilege for SCHED_FIFO here (CI runs as root): %v", err)
		}
		t.Fatal(err)
	}
	lockedThread(t)
	for _, tid := range threadIDs(t) {
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil {
			continue // ended meanwhile
		}
		if attr.Policy != unix.SCHED_FIFO || attr.Priority != prio {
			t.Errorf("thread %d: policy %d priority %d; want SCHED_FIFO (%d) at %d", tid, attr.Policy, attr.Priority, unix.SCHED_FIFO, prio)
		}
	}
}

// lockedThread keeps a goroutine locked to a thread of its own until the
// test ends: a thread started after the call under test, when the others
// are busy in system calls, which is the closest a test gets.
func lockedThread(t *testing.T) {
	t.Helper()
	done := make(chan struct{})
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		close(started)
		<-done
	}()
	<-started
	t.Cleanup(func() { close(done) })
}

// threadIDs returns the IDs of the test process's threads.
func threadIDs(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			ids = append(ids, tid)
		}
	}
	return ids
}

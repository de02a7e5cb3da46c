package cycle

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/shm"
)

// forcePreempt is the Go runtime's time slice (runtime.forcePreemptNS):
// sysmon asks for the P of a goroutine that has held it this long.
const forcePreempt = 10 * time.Millisecond

// TestRunYieldsOnlyForTheRuntime: a cycle whose sleep keeps its P yields
// only for the runtime: when it asks for the P, which sysmon does at most
// once per forcePreempt of the same goroutine on the same P, or just
// before it would, after a cycle up to a period and a half earlier
// (yieldAhead). Over a run, the yields are then at most the run's length
// in forcePreempt slices less two periods, plus one. The cycle used to
// yield every 5 ms (a hand-over of its P through two other threads each
// time, most of the cycle process's system calls beyond its own two).
// The collector is off for the run: its stop-the-worlds ask too.
func TestRunYieldsOnlyForTheRuntime(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a sleep that keeps its P needs GOMAXPROCS ≥ 2")
	}
	m, _, mem := bus(t)
	const cycles = 300
	e := New(m, mem, Config{Period: time.Millisecond, Cycles: cycles, KeepGC: true, RT: noRT(), Pipelined: true, SleepKeepsP: true})
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	start := rt.Now()
	if n := e.Run(); n != cycles {
		t.Fatalf("ran %d cycles, want %d", n, cycles)
	}
	took := rt.Now() - start
	t.Logf("%d yields in %v", e.yields, time.Duration(took))
	slice := forcePreempt - 2*time.Millisecond
	if most := uint64(took/int64(slice)) + 1; e.yields > most {
		t.Errorf("%d yields in %v, want at most %d (one per %v)", e.yields, time.Duration(took), most, slice)
	}
}

// TestYieldLateIsFlagged: a cycle woken late because the yield in the
// sleep before it returned after its deadline carries shm.SampleYieldLate,
// and no other does. Signals cut the cycle thread's sleeps short (SIGURG,
// the runtime's own preemption signal, every 2 ms), and the stand-in for
// the runtime's hand-back returns at once, or every third time after more
// than a period (the P handed back late), so that a slow hand-back of the
// real scheduler on a loaded host cannot pass for one.
func TestYieldLateIsFlagged(t *testing.T) {
	m, _, mem := bus(t)
	const cycles = 60
	e := New(m, mem, Config{Period: time.Millisecond, Cycles: cycles, KeepGC: true, RT: noRT(), Pipelined: true, SleepKeepsP: true})
	late := map[uint64]bool{}      // the cycles after a slow yield
	returned := map[uint64]int64{} // when each yield returned, by the next cycle
	e.yielded = func() {
		if e.yields%3 == 2 {
			late[e.cycle] = true // the next sample's cycle
			time.Sleep(1200 * time.Microsecond)
		}
		returned[e.cycle] = rt.Now()
	}
	tid := make(chan int, 1)
	e.OnStart = func(*rt.Setup) { tid <- unix.Gettid() }
	stop := make(chan struct{})
	go func() {
		pid, cycleThread := unix.Getpid(), <-tid
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = unix.Tgkill(pid, cycleThread, unix.SIGURG)
			}
		}
	}()
	e.Run()
	close(stop)
	var s shm.Sample
	flagged := 0
	for mem.Samples().Next(&s) {
		got := s.Flags.Has(shm.SampleYieldLate)
		// A quick yield that returned well before the deadline is
		// flagged only if the host held the thread between its return
		// and the engine's clock reading: not a case to count here.
		hostHeld := got && !late[s.Cycle] && returned[s.Cycle] > s.Deadline-int64(200*time.Microsecond)
		if got != late[s.Cycle] && !hostHeld {
			t.Errorf("cycle %d: yield-late %v, want %v (flags %v)", s.Cycle, got, late[s.Cycle], s.Flags)
		}
		if got {
			flagged++
			if s.Wake <= s.Deadline {
				t.Errorf("cycle %d flagged yield-late but woke %d ns before its deadline", s.Cycle, s.Deadline-s.Wake)
			}
		}
	}
	if flagged == 0 {
		t.Fatalf("no cycle flagged in %d cycles with %d yields", cycles, e.yields)
	}
}

// TestRunGivesTheThreadBack: the thread that ran the cycle leaves Run at
// the scheduling policy it came with (its CPUs: rt's
// TestCloseRestoresTheThread). Run unlocks it, and the runtime then runs
// any goroutine on it. Left at the cycle's SCHED_FIFO priority, it ran the
// collector's workers above everything else once the cycle had stopped,
// and a worker waiting for a goroutine on a thread of lower priority spun:
// a cycle process that did not end.
func TestRunGivesTheThreadBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SCHED_FIFO needs root (or CAP_SYS_NICE)")
	}
	m, _, mem := bus(t)
	e := New(m, mem, Config{Period: time.Millisecond, Cycles: 20, KeepGC: true, Pipelined: true,
		RT: rt.Options{Priority: 10, Core: -1}})
	type sched struct{ policy, prio uint32 }
	read := func() sched {
		attr, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			return sched{policy: 1<<32 - 1}
		}
		return sched{attr.Policy, attr.Priority}
	}
	got := make(chan [2]sched, 1)
	go func() {
		// Locked around Run, so that Run's unlock leaves it on the same
		// thread; and for good, so that the thread ends with the test.
		runtime.LockOSThread()
		before := read()
		e.Run()
		got <- [2]sched{before, read()}
	}()
	s := <-got
	if s[1] != s[0] {
		t.Errorf("after Run: policy %d priority %d, want policy %d priority %d as before", s[1].policy, s[1].prio, s[0].policy, s[0].prio)
	}
	if refused := e.Setup().Refused(); len(refused) != 0 {
		t.Errorf("refused as root: %+v", refused)
	}
}

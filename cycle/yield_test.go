package cycle

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/shm"
)

// TestYieldsOnItsOwnSchedule: a cycle whose sleep keeps its P yields to
// the scheduler every yieldEvery, after a cycle that left at least half a
// period before its next deadline, and not otherwise; a cycle whose sleep
// gives the P up never does (its sleep passes through the scheduler).
func TestYieldsOnItsOwnSchedule(t *testing.T) {
	const ms = int64(time.Millisecond)
	for _, tc := range []struct {
		name           string
		keepP          bool
		sinceLast      int64 // from the last yield to the cycle's end
		slack          int64 // from the cycle's end to the next deadline
		period         time.Duration
		wantYield      bool
		wantLastIsThen bool
	}{
		{"due, room", true, 5 * ms, ms / 2, time.Millisecond, true, false},
		{"due, much room", true, 9 * ms, 900_000, time.Millisecond, true, false},
		{"not due", true, 5*ms - 1, 900_000, time.Millisecond, false, true},
		{"due, too little room", true, 6 * ms, ms/2 - 1, time.Millisecond, false, true},
		{"due, room at 250 µs", true, 5 * ms, 125_000, 250 * time.Microsecond, true, false},
		{"sleep gives the P up", false, 20 * ms, 900_000, time.Millisecond, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{cfg: Config{Period: tc.period, SleepKeepsP: tc.keepP}, yield: runtime.Gosched}
			end := rt.Now()
			e.lastYield = end - tc.sinceLast
			last := e.lastYield
			e.maybeYield(end, end+tc.slack)
			if got := e.yields == 1; got != tc.wantYield {
				t.Errorf("yielded %v, want %v", got, tc.wantYield)
			}
			if tc.wantLastIsThen && e.lastYield != last {
				t.Errorf("last yield moved without a yield")
			}
			if tc.wantYield && e.lastYield < end {
				t.Errorf("last yield %d before the cycle's end %d", e.lastYield, end)
			}
		})
	}
}

// TestRunYields: over a real run, the cycle yields about every yieldEvery
// and never more often.
func TestRunYields(t *testing.T) {
	m, _, mem := bus(t)
	const cycles = 100
	e := New(m, mem, Config{Period: time.Millisecond, Cycles: cycles, KeepGC: true, RT: noRT(), Pipelined: true, SleepKeepsP: true})
	start := rt.Now()
	if n := e.Run(); n != cycles {
		t.Fatalf("ran %d cycles, want %d", n, cycles)
	}
	took := rt.Now() - start
	if max := uint64(took/int64(yieldEvery)) + 1; e.yields == 0 || e.yields > max {
		t.Errorf("%d yields in %v, want 1 to %d", e.yields, time.Duration(took), max)
	}
}

// TestYieldLateIsFlagged: a cycle woken late because the yield before it
// returned after its deadline carries shm.SampleYieldLate, and no other
// does. The stand-in yield returns at once, or every third time after more
// than a period (the runtime handing the P back late), so that a slow
// yield of the real scheduler on a loaded host cannot pass for one.
func TestYieldLateIsFlagged(t *testing.T) {
	m, _, mem := bus(t)
	const cycles = 60
	e := New(m, mem, Config{Period: time.Millisecond, Cycles: cycles, KeepGC: true, RT: noRT(), Pipelined: true, SleepKeepsP: true})
	late := map[uint64]bool{}      // the cycles after a slow yield
	returned := map[uint64]int64{} // when each yield returned, by the next cycle
	e.yield = func() {
		if e.yields%3 == 2 {
			late[e.cycle] = true // the next sample's cycle
			time.Sleep(1200 * time.Microsecond)
		}
		returned[e.cycle] = rt.Now()
	}
	e.Run()
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

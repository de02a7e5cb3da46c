package rt

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// DisableTHP turns transparent huge pages off for the whole process
// (prctl PR_SET_THP_DISABLE), for the mappings it has and those it makes
// later: no page fault of the process is served with a huge page and
// khugepaged does not collapse its memory. A collapse copies 2 MiB with
// the process's mappings locked, and on a kernel without PREEMPT_RT it is
// not preempted by the cycle's real-time thread (5.4–7.4 ms measured).
func DisableTHP() error {
	if err := unix.Prctl(unix.PR_SET_THP_DISABLE, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl PR_SET_THP_DISABLE: %w", err)
	}
	return nil
}

// errOnlyCore is AvoidCore's error for a process that has no CPU but the
// one to avoid.
var errOnlyCore = errors.New("the process has no other CPU")

// AvoidCore keeps every thread of the process, and those it starts later,
// off CPU core: a process that stands in for what is not on the cycle's
// host (the simulated segment stands in for the devices on the wire) then
// does not share the cycle's core with it, as on a target whose cycle
// core is isolated. A core outside the process's CPUs changes nothing; a
// process that has only that core keeps it, and an error says so.
//
// GOMAXPROCS is fixed at its value before the call, so that the runtime
// does not lower it to the CPUs left: a goroutine woken from a blocking
// system call would then wait for the one P.
func AvoidCore(core int) error {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return fmt.Errorf("avoid CPU %d: %w", core, err)
	}
	if core < 0 || !set.IsSet(core) {
		return nil
	}
	set.Clear(core)
	if set.Count() == 0 {
		return fmt.Errorf("avoid CPU %d: %w", core, errOnlyCore)
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	return setThreadsAffinity(&set)
}

// OneCPU reports whether the process may run on one CPU only.
func OneCPU() bool {
	var set unix.CPUSet
	return unix.SchedGetaffinity(0, &set) == nil && set.Count() == 1
}

// ProcessFIFO gives every thread of the process, and those it starts
// later, SCHED_FIFO at prio: for a process whose real-time work shares a
// core with the rest of its threads (the simulated segment confined to
// the cores the cycle leaves it).
//
// One real-time thread among threads of the normal scheduler on the same
// core can stall for most of a second. The Go runtime waits for some of
// its own states by spinning with sched_yield, for example a goroutine
// returning from a system call while the garbage collector, on another
// thread, scans its stack. sched_yield under SCHED_FIFO yields only to
// threads of the same or a higher priority, so the real-time thread spins
// while the thread it waits for cannot run, until the kernel's real-time
// throttling (sched_rt_runtime_us, 950 ms of every second by default)
// stops it. Threads of one priority yield to each other.
func ProcessFIFO(prio int) error {
	return eachThread(func(tid int) error { return setThreadFIFO(tid, prio) })
}

// setThreadsAffinity sets the CPUs of every thread of the process.
func setThreadsAffinity(set *unix.CPUSet) error {
	return eachThread(func(tid int) error {
		if err := unix.SchedSetaffinity(tid, set); err != nil {
			return fmt.Errorf("set CPU affinity of thread %d: %w", tid, err)
		}
		return nil
	})
}

// eachThread calls set for every thread of the process; a thread that
// ended meanwhile (ESRCH) is skipped. A thread started during a pass
// inherits its creator's settings, which may not be set yet; passes
// repeat until one finds every thread done.
func eachThread(set func(tid int) error) error {
	done := map[int]bool{}
	for {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("threads of the process: %w", err)
		}
		fresh := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := set(tid); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
			done[tid] = true
			fresh++
		}
		if fresh == 0 {
			return nil
		}
	}
}

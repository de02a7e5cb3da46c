package spikes

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// identity is what attribution knows of the cycle process.
type identity struct {
	// tid is the cycle thread's; prio its kernel priority (99 − its
	// SCHED_FIFO priority).
	tid  int32
	prio int32
	// threads are the cycle process's threads, the cycle thread among
	// them.
	threads map[int32]bool
}

// names resolves what records hold as numbers.
type names interface {
	irq(num int32) string
	function(addr uint64) string
	policy(pid int32, prio int32) string
}

// softirqNames are the softirq vectors' names (include/linux/interrupt.h).
var softirqNames = [...]string{"HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"}

func softirqName(vec int32) string {
	if vec >= 0 && int(vec) < len(softirqNames) {
		return softirqNames[vec]
	}
	return "vec " + strconv.Itoa(int(vec))
}

// kernelMemoryThreads are the kernel threads whose time is memory
// management.
var kernelMemoryThreads = [][]byte{[]byte("khugepaged"), []byte("kcompactd"), []byte("kswapd")}

// causeKey identifies a cause while its time is summed.
type causeKey struct {
	class Class
	name  string
	pid   int32
}

// window is one late cycle's times.
type window struct {
	cycle               uint64
	deadline, wake, end int64
	overrun             bool
}

// attribute splits the window of w among causes, from the records of the
// cycle's CPU (in time order, covering the window and what came before
// it). It returns the spike without Steal.
func attribute(recs []record, w window, id identity, n names) Spike {
	to := w.wake
	if w.overrun {
		to = w.end
	}
	sp := Spike{Cycle: w.cycle, Deadline: w.deadline, Wake: w.wake, End: w.end, Overrun: w.overrun,
		Late: time.Duration(w.wake - w.deadline)}
	from := w.deadline
	if to <= from {
		return sp
	}
	// Start at the last switch before the window: it says who ran.
	i, _ := slices.BinarySearchFunc(recs, from, func(r record, t int64) int { return cmp.Compare(r.ts, t) })
	start := -1
	for j := i - 1; j >= 0; j-- {
		if recs[j].kind == kindSwitch {
			start = j
			break
		}
	}
	if start < 0 {
		sp.Incomplete = true // the trace does not reach back to the window
	}
	for j := max(start, 0) + 1; j < len(recs) && recs[j-1].ts <= to; j++ {
		// The events a gap marks are younger than the record before it.
		if recs[j].kind == kindGap {
			sp.Incomplete = true // the ring lost events of the window
			break
		}
	}
	if id.tid <= 0 {
		// The cycle thread is the task on the core when the cycle woke.
		for j := i; j < len(recs) && recs[j].ts <= w.wake; j++ {
			if recs[j].kind == kindSwitch {
				id.tid = recs[j].nextPID
			}
		}
	}
	st := state{id: id, names: n, cur: -1}
	if w.overrun {
		st.jobFrom, st.jobTo = w.wake, w.end
	}
	if start >= 0 {
		st.t = recs[start].ts
	} else {
		start, st.t = i, from
	}
	acc := st.replay(recs, start, from, to)
	if st.cur != id.tid {
		// At its wake-up and at its job's end the cycle thread runs: a
		// trace that says otherwise lost events.
		sp.Incomplete = true
	}
	setCauses(&sp, acc)
	return sp
}

// replay runs the records from start (the last switch before from) and
// charges each slice of from to to to its cause.
func (st *state) replay(recs []record, start int, from, to int64) map[causeKey]time.Duration {
	// Kernel work and compaction outlast switches: a task that slept in
	// the middle of one resumes it. Their state comes from all the
	// history kept, the rest from the last switch.
	// So does the throttling of the core's real-time tasks: it can begin
	// long before the window, switches among lower tasks after it.
	for j := range recs[:start] {
		switch k := recs[j].kind; {
		case k >= kindWorkStart && k <= kindCompactEnd:
			st.applyKernelWork(&recs[j])
		case k == kindSwitch || k == kindMigrate:
			st.applyRTOff(&recs[j])
		}
	}
	acc := map[causeKey]time.Duration{}
	// A lower priority on the core while the cycle is runnable is either
	// a task this kernel cannot preempt (in the kernel) or the real-time
	// tasks throttled. Throttling shows at the first switch of the
	// stretch, which picks a lower priority over the cycle; and it cannot
	// begin within the stretch (the cycle waiting uses no real-time
	// runtime), so it held from the stretch's start: the time charged to
	// lower priorities until then (pending) is moved to it.
	pending := map[causeKey]time.Duration{}
	charge := func(until int64) {
		a, b := max(st.t, from), min(until, to)
		if b > a {
			if k, ok := st.cause(); ok {
				acc[k] += time.Duration(b - a)
				if st.lowerHoldsRunnable() {
					pending[k] += time.Duration(b - a)
				}
			}
		}
		st.t = until
	}
	tid := st.id.tid
	for j := start; j < len(recs) && recs[j].ts < to; j++ {
		r := &recs[j]
		charge(r.ts)
		throttled := st.throttled
		st.apply(r)
		if st.throttled && !throttled {
			for k, d := range pending {
				acc[k] -= d
				if acc[k] == 0 {
					delete(acc, k)
				}
				acc[throttlingKey] += d
			}
		}
		if !st.runnable || st.throttled {
			clear(pending)
		}
		if r.kind == kindIRQEntry && r.num == vectorReschedule && !st.runnable && st.cur != tid &&
			wokenRemotely(recs[j+1:], tid) {
			// Another core woke the cycle thread and traced it there;
			// this core sees the IPI that asks it to reschedule.
			st.becomeRunnable()
		}
	}
	charge(to)
	return acc
}

// setCauses lists the causes of acc in sp, largest first, with their
// shares of the excess (one unknown cause when the trace is incomplete).
func setCauses(sp *Spike, acc map[causeKey]time.Duration) {
	for k, d := range acc {
		sp.Excess += d
		sp.Causes = append(sp.Causes, Cause{Class: k.class, Name: k.name, PID: int(k.pid), Time: d})
	}
	if sp.Incomplete {
		sp.Causes = []Cause{{Class: ClassUnknown, Name: "trace incomplete", Time: sp.Excess}}
	}
	for i := range sp.Causes {
		if sp.Excess > 0 {
			sp.Causes[i].Share = float64(sp.Causes[i].Time) / float64(sp.Excess)
		}
	}
	slices.SortFunc(sp.Causes, func(a, b Cause) int {
		if c := cmp.Compare(b.Time, a.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
}

// state is what runs on the CPU at one moment of a replay of its trace.
type state struct {
	id    identity
	names names
	t     int64
	// cur is the task running (−1 unknown, 0 idle), its priority and
	// comm.
	cur     int32
	curPrio int32
	curComm [16]byte
	// irqs are the hard interrupts being handled (nested), softirq the
	// vector being run (−1 none).
	irqs    []int32
	softirq int32
	inSoft  bool
	// work is the function of the workqueue item the running kworker
	// executes (0 none), by kworker.
	work map[int32]uint64
	// compact counts the compactions in progress, by task: a task that
	// sleeps on a page under migration resumes its compaction when it
	// runs again.
	compact map[int32]int
	// fault is set after a page fault of the cycle process until the
	// next event.
	fault bool
	// runnable is set while the cycle thread is runnable but not
	// running; throttled once lower-priority work ran meanwhile.
	runnable, throttled bool
	// rtOff is set while the core's real-time tasks are throttled: a
	// task of a lower class was picked while a real-time task was
	// runnable on the core, which only throttling does
	// (sched_rt_runtime_us, the fair server), and none has run since.
	// rtWaiting are the real-time tasks switched out runnable and not
	// run since (a migration of one traced here takes it off; one an
	// idle core pulls away is traced there, and stays: the cycle's core
	// rarely has real-time tasks that may move).
	rtOff     bool
	rtWaiting map[int32]bool
	// blocked is set while the cycle thread sleeps in the middle of its
	// job (jobFrom to jobTo, an overrun's): on a frame, a lock, another
	// of its threads — not on its timer.
	blocked        bool
	jobFrom, jobTo int64
}

// wokenRemotely tells whether the next switch after a reschedule IPI
// runs the cycle thread tid without a wake-up of it on this core: then
// another core woke it (and traced the wake-up there).
func wokenRemotely(rest []record, tid int32) bool {
	for i := range rest {
		switch r := &rest[i]; {
		case r.kind == kindWakeup && r.nextPID == tid:
			return false
		case r.kind == kindSwitch:
			return r.nextPID == tid
		}
	}
	return false
}

// throttlingKey is the cause of the time the cycle was runnable while the
// core's real-time tasks were throttled.
var throttlingKey = causeKey{class: ClassThrottling, name: "RT throttling: lower-priority work ran while the cycle was runnable"}

// lowerHoldsRunnable tells whether a task of lower priority than the
// cycle's runs, not in an interrupt, while the cycle thread is runnable
// and not yet known to be throttled.
func (s *state) lowerHoldsRunnable() bool {
	return s.runnable && !s.throttled && s.cur > 0 && s.cur != s.id.tid && s.curPrio > s.id.prio &&
		len(s.irqs) == 0 && !s.inSoft
}

func (s *state) cause() (causeKey, bool) {
	switch {
	case len(s.irqs) > 0:
		// A hard interrupt, with interrupts off: it delays the timer
		// that wakes the cycle as much as the cycle.
		num := s.irqs[len(s.irqs)-1]
		return causeKey{class: ClassIRQ, name: s.names.irq(num)}, true
	case s.inSoft && (s.cur == s.id.tid || s.runnable):
		// A softirq holds the core whoever's context it borrowed: run on
		// the exit of the interrupt that woke the cycle, or of a system
		// call of the cycle's own (local_bh_enable), it delays the cycle
		// as much as in ksoftirqd — rtla's timerlat counts it as softirq
		// interference too.
		return causeKey{class: ClassSoftirq, name: softirqName(s.softirq)}, true
	case s.cur == s.id.tid:
		if s.compact[s.cur] > 0 {
			return causeKey{class: ClassKernelMemory, name: "compaction in the cycle process"}, true
		}
		if s.fault {
			return causeKey{class: ClassKernelMemory, name: "page faults of the cycle process"}, true
		}
		return causeKey{}, false // the cycle's own time
	case s.blocked && !s.runnable:
		// Nothing on this core held it: it waited for something else.
		return causeKey{class: ClassSelf, pid: s.id.tid,
			name: "the cycle thread blocked in its job (a frame, a lock, another of its threads)"}, true
	case s.cur < 0:
		return causeKey{class: ClassHost, name: "no trace of the core"}, true
	case !s.runnable && s.rtOff:
		// Due while the core's real-time tasks are throttled: whether
		// its timer fired then (its wake-up traced on another core, or
		// not at all) or late, the cycle could not run before the
		// throttling ended.
		return throttlingKey, true
	case !s.runnable:
		// The cycle's timer has not fired yet: whatever the core runs
		// meanwhile does not hold the cycle back — a timer that fires
		// late is the host's (a halted or preempted vCPU, an SMI) or
		// a section with interrupts off, which no event shows.
		if s.cur == 0 {
			return causeKey{class: ClassHost, name: "timer late, core idle (halted or preempted vCPU, SMI)"}, true
		}
		if s.compact[s.cur] > 0 {
			// Compaction isolates pages under the zone and LRU locks with
			// interrupts off: a timer late while it runs here is its.
			return s.compaction("timer held off"), true
		}
		return causeKey{class: ClassHost, name: "timer late (preempted vCPU, SMI, or interrupts off)"}, true
	case s.compact[s.cur] > 0:
		// Memory management whoever asked for it (a direct compaction of
		// an allocation, compact_memory written): named with the task.
		return s.compaction(""), true
	case s.throttled:
		return throttlingKey, true
	case s.cur == 0:
		return causeKey{class: ClassHost, name: "core waking from idle"}, true
	}
	if fn := s.work[s.cur]; fn != 0 {
		return causeKey{class: ClassKernelWork, name: "workqueue " + s.names.function(fn)}, true
	}
	comm := string(bytes.TrimRight(s.curComm[:], "\x00"))
	for _, k := range kernelMemoryThreads {
		if bytes.HasPrefix(s.curComm[:], k) {
			return causeKey{class: ClassKernelMemory, name: comm, pid: s.cur}, true
		}
	}
	name := fmt.Sprintf("%s/%d %s", comm, s.cur, s.names.policy(s.cur, s.curPrio))
	if s.curPrio > s.id.prio {
		// A lower priority kept the core from the runnable cycle without
		// throttling: it was in the kernel, where this kernel does not
		// preempt it (Dynamic Preempt: none) until it yields.
		name += " in kernel, not preemptible"
	}
	if s.id.threads[s.cur] {
		return causeKey{class: ClassSelf, name: name, pid: s.cur}, true
	}
	return causeKey{class: ClassTask, name: name, pid: s.cur}, true
}

// apply updates the state with one record, the records taken in the
// order the kernel wrote them.
func (s *state) apply(r *record) {
	if r.kind != kindFault {
		s.fault = false
	}
	switch r.kind {
	case kindSwitch:
		s.applySwitch(r)
	case kindWakeup:
		if r.nextPID == s.id.tid {
			s.becomeRunnable()
		}
	case kindIRQEntry, kindIRQExit, kindSoftirqEntry, kindSoftirqExit:
		s.applyInterrupt(r)
	case kindWorkStart, kindWorkEnd, kindCompactBegin, kindCompactEnd:
		s.applyKernelWork(r)
	case kindFault:
		s.fault = s.id.threads[r.pid]
	case kindMigrate:
		s.applyRTOff(r)
	}
	if s.cur < 0 && r.pid >= 0 && r.kind != kindSwitch {
		s.cur = r.pid // any event names the task it ran in
	}
}

// becomeRunnable takes the cycle thread's wake-up (or preemption): woken
// into throttling, it waits for its end.
func (s *state) becomeRunnable() {
	s.runnable, s.blocked, s.throttled = true, false, s.throttled || s.rtOff
}

// applySwitch takes a context switch: the task now on the CPU, whether
// the cycle thread was preempted, and whether a lower priority was picked
// over a runnable cycle thread.
func (s *state) applySwitch(r *record) {
	if r.prevPID == s.id.tid {
		if r.prevState&0xff == 0 {
			s.becomeRunnable() // preempted: still runnable
		} else {
			s.blocked = r.ts >= s.jobFrom && r.ts < s.jobTo
		}
	}
	s.applyRTOff(r)
	s.cur, s.curPrio, s.curComm = r.nextPID, r.nextPrio, r.comm
	s.irqs, s.inSoft = s.irqs[:0], false
	if r.nextPID == s.id.tid {
		s.runnable, s.throttled, s.blocked = false, false, false
	} else if s.runnable && (r.nextPID == 0 || r.nextPrio > s.id.prio) {
		s.throttled = true // a lower priority picked over a runnable cycle
	}
}

// firstFairPrio is the kernel's priority of the most urgent task that is
// not real-time (nice −20); real-time priorities are below it.
const firstFairPrio = 100

// applyRTOff follows, through a switch or a migration, whether the
// core's real-time tasks are throttled.
func (s *state) applyRTOff(r *record) {
	if r.kind == kindMigrate {
		delete(s.rtWaiting, r.nextPID)
		return
	}
	if r.prevPID > 0 && r.prevPrio < firstFairPrio && r.prevState&0xff == 0 {
		if s.rtWaiting == nil {
			s.rtWaiting = map[int32]bool{}
		}
		s.rtWaiting[r.prevPID] = true // preempted: still runnable here
	}
	delete(s.rtWaiting, r.nextPID) // it runs: whatever its class now
	if r.nextPID > 0 && r.nextPrio < firstFairPrio {
		s.rtOff = false
	} else if len(s.rtWaiting) > 0 {
		s.rtOff = true // a lower class picked over a runnable real-time task
	}
}

// applyInterrupt takes a hard or soft interrupt entry or exit: the stack
// of hard interrupts in progress and the softirq being run.
func (s *state) applyInterrupt(r *record) {
	switch r.kind {
	case kindIRQEntry:
		s.irqs = append(s.irqs, r.num)
	case kindIRQExit:
		if len(s.irqs) > 0 {
			s.irqs = s.irqs[:len(s.irqs)-1]
		}
	case kindSoftirqEntry:
		s.inSoft, s.softirq = true, r.num
	case kindSoftirqExit:
		s.inSoft = false
	}
}

// applyKernelWork takes the start or end of a workqueue item or of a
// memory compaction.
func (s *state) applyKernelWork(r *record) {
	switch r.kind {
	case kindWorkStart:
		if s.work == nil {
			s.work = map[int32]uint64{}
		}
		s.work[r.pid] = r.fn
	case kindWorkEnd:
		delete(s.work, r.pid)
	case kindCompactBegin:
		if s.compact == nil {
			s.compact = map[int32]int{}
		}
		s.compact[r.pid]++
	case kindCompactEnd:
		if s.compact[r.pid] > 1 {
			s.compact[r.pid]--
		} else {
			delete(s.compact, r.pid)
		}
	}
}

// compaction is the cause of the compaction the running task does, named
// with the task (and how, when how is not "").
func (s *state) compaction(how string) causeKey {
	comm := string(bytes.TrimRight(s.curComm[:], "\x00"))
	name := fmt.Sprintf("compaction in %s/%d %s", comm, s.cur, s.names.policy(s.cur, s.curPrio))
	if how != "" {
		name += ", " + how
	}
	return causeKey{class: ClassKernelMemory, pid: s.cur, name: name}
}

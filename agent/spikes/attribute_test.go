package spikes

import (
	"strconv"
	"testing"
	"time"
)

// fakeNames names without /proc.
type fakeNames struct{}

func (fakeNames) irq(n int32) string       { return "irq " + strconv.Itoa(int(n)) }
func (fakeNames) function(a uint64) string { return "fn" + strconv.FormatUint(a, 16) }
func (fakeNames) policy(_, p int32) string { return "prio " + strconv.Itoa(int(p)) }

const (
	cycleTID  = 100
	cyclePrio = 99 - 80
	us        = int64(time.Microsecond)
)

func sw(ts int64, prev, next int32, nextPrio int32, comm string, prevState int64) record {
	r := record{ts: ts, kind: kindSwitch, prevPID: prev, nextPID: next, nextPrio: nextPrio, prevState: prevState}
	copy(r.comm[:], comm)
	return r
}

// swFrom is sw with the priority of the task switched out.
func swFrom(ts int64, prev, prevPrio, next, nextPrio int32, comm string, prevState int64) record {
	r := sw(ts, prev, next, nextPrio, comm, prevState)
	r.prevPrio = prevPrio
	return r
}

func ev(ts int64, k kind, pid, num int32) record {
	return record{ts: ts, kind: k, pid: pid, num: num, nextPID: num}
}

var id = identity{tid: cycleTID, prio: cyclePrio, threads: map[int32]bool{cycleTID: true, 101: true}}

// TestAttribute replays made-up traces of the cycle's core and checks
// each cause gets its time, the largest first.
func TestAttribute(t *testing.T) {
	const d = 1000 * us // the deadline
	cases := []struct {
		name    string
		recs    []record
		w       window
		want    Class
		wantPID int
		share   float64
	}{
		{name: "a FIFO hog above the cycle",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-100*us, 0, 4711, 9, "hog", 0),
				ev(d+2*us, kindWakeup, 4711, cycleTID),
				sw(d+3000*us, 4711, cycleTID, cyclePrio, "cycle", 1),
				sw(d+3100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 3005*us, end: d + 3090*us}, want: ClassTask, wantPID: 4711, share: 0.99},
		{name: "the CPU idle: the host",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				ev(d+4000*us, kindIRQEntry, 0, -1),
				ev(d+4001*us, kindWakeup, 0, cycleTID),
				ev(d+4002*us, kindIRQExit, 0, -1),
				sw(d+4004*us, 0, cycleTID, cyclePrio, "cycle", 0),
				sw(d+4100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 4006*us, end: d + 4050*us}, want: ClassHost, share: 0.99},
		{name: "a CFS task runs while the timer is late: the host, not the task",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-400*us, 0, 777, 120, "prometheus", 0),
				ev(d+2100*us, kindIRQEntry, 777, -1),
				ev(d+2101*us, kindWakeup, 777, cycleTID),
				ev(d+2102*us, kindIRQExit, 777, -1),
				sw(d+2104*us, 777, cycleTID, cyclePrio, "cycle", 0),
				sw(d+2200*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 2106*us, end: d + 2150*us}, want: ClassHost, share: 0.99},
		{name: "a compaction runs while the timer is late: kernel memory, not the host",
			// Compaction isolates pages with interrupts off (zone and LRU
			// locks): the cycle's timer fires only when it lets go.
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-400*us, 0, 4711, 9, "ecmemhog", 0),
				{ts: d - 390*us, kind: kindCompactBegin, pid: 4711},
				ev(d+2100*us, kindIRQEntry, 4711, -1),
				ev(d+2101*us, kindWakeup, 4711, cycleTID),
				ev(d+2102*us, kindIRQExit, 4711, -1),
				{ts: d + 2103*us, kind: kindCompactEnd, pid: 4711},
				sw(d+2104*us, 4711, cycleTID, cyclePrio, "cycle", 0),
				sw(d+2200*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 2106*us, end: d + 2150*us}, want: ClassKernelMemory, wantPID: 4711, share: 0.99},
		{name: "NET_RX in idle",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				ev(d-10*us, kindSoftirqEntry, 0, 3),
				ev(d+1*us, kindWakeup, 0, cycleTID),
				ev(d+800*us, kindSoftirqExit, 0, 3),
				sw(d+802*us, 0, cycleTID, cyclePrio, "cycle", 0),
				sw(d+900*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 804*us, end: d + 850*us}, want: ClassSoftirq, share: 0.98},
		{name: "NET_RX on the exit of the interrupt that woke the cycle, in the cycle thread's context",
			// As a frame flood steered to the core does: the timer fires
			// on time, and the softirq pending on its exit runs before
			// the cycle returns to user space.
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-400*us, 0, cycleTID, cyclePrio, "cycle", 0),
				ev(d+10*us, kindIRQEntry, cycleTID, -1),
				ev(d+11*us, kindWakeup, cycleTID, cycleTID),
				ev(d+15*us, kindIRQExit, cycleTID, -1),
				ev(d+16*us, kindSoftirqEntry, cycleTID, 3),
				ev(d+2500*us, kindSoftirqExit, cycleTID, 3),
				sw(d+2600*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 2502*us, end: d + 2550*us}, want: ClassSoftirq, share: 0.98},
		{name: "NET_RX in the cycle thread's context overruns its job",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				ev(d+1*us, kindWakeup, 0, cycleTID),
				sw(d+2*us, 0, cycleTID, cyclePrio, "cycle", 0),
				ev(d+30*us, kindSoftirqEntry, cycleTID, 3),
				ev(d+1800*us, kindSoftirqExit, cycleTID, 3),
				sw(d+1900*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 4*us, end: d + 1850*us, overrun: true}, want: ClassSoftirq, share: 0.9},
		{name: "compaction by a FIFO task above the cycle, which sleeps on a page and resumes it",
			// As writing /proc/sys/vm/compact_memory does, or a direct
			// compaction of an allocation: the time is memory management,
			// whoever asked for it, and is not lost when the compacting
			// task sleeps on a page under migration and comes back.
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-300*us, 0, 4711, 9, "ecmemhog", 0),
				{ts: d - 290*us, kind: kindCompactBegin, pid: 4711},
				sw(d-200*us, 4711, 0, 120, "swapper/1", 2),
				sw(d-150*us, 0, 4711, 9, "ecmemhog", 0),
				ev(d+1*us, kindWakeup, 4711, cycleTID),
				{ts: d + 3000*us, kind: kindCompactEnd, pid: 4711},
				sw(d+3010*us, 4711, cycleTID, cyclePrio, "cycle", 1),
				sw(d+3100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 3012*us, end: d + 3090*us}, want: ClassKernelMemory, wantPID: 4711, share: 0.95},
		{name: "woken from the other core while ksoftirqd runs NET_RX: the softirq from the reschedule IPI on",
			// The cycle thread blocked in its job (a system call whose P
			// the Go runtime took, a frame); the other core wakes it and
			// traces the wake-up there: this core sees only the
			// reschedule IPI, then ksoftirqd finishing its softirq.
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				ev(d+1*us, kindWakeup, 0, cycleTID),
				sw(d+2*us, 0, cycleTID, cyclePrio, "cycle", 0),
				sw(d+300*us, cycleTID, 24, 120, "ksoftirqd/1", 1),
				ev(d+310*us, kindSoftirqEntry, 24, 3),
				ev(d+500*us, kindIRQEntry, 24, -2),
				ev(d+501*us, kindIRQExit, 24, -2),
				ev(d+1500*us, kindSoftirqExit, 24, 3),
				sw(d+1510*us, 24, cycleTID, cyclePrio, "cycle", 0),
				sw(d+1700*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 4*us, end: d + 1600*us, overrun: true}, want: ClassSoftirq, share: 0.6},
		{name: "blocked in its job, the core idle: the cycle process, not the host",
			// Waiting for its frame, a lock or another of its threads:
			// nothing on this core held it.
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				ev(d+1*us, kindWakeup, 0, cycleTID),
				sw(d+2*us, 0, cycleTID, cyclePrio, "cycle", 0),
				sw(d+100*us, cycleTID, 0, 120, "swapper/1", 1),
				ev(d+900*us, kindIRQEntry, 0, -4),
				ev(d+901*us, kindWakeup, 0, cycleTID),
				ev(d+902*us, kindIRQExit, 0, -4),
				sw(d+903*us, 0, cycleTID, cyclePrio, "cycle", 0),
				sw(d+1000*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 4*us, end: d + 950*us, overrun: true}, want: ClassSelf, wantPID: cycleTID, share: 0.9},
		{name: "throttled: a CFS task runs while the cycle is runnable",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				ev(d+1*us, kindWakeup, 0, cycleTID),
				sw(d+2*us, 0, 555, 120, "make", 0),
				sw(d+5000*us, 555, cycleTID, cyclePrio, "cycle", 0),
				sw(d+5100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 5002*us, end: d + 5050*us}, want: ClassThrottling, share: 0.99},
		{name: "throttled while a CFS task runs: no switch until the first picks a lower priority",
			// The cycle wakes during throttling with a CFS task on the
			// core; it keeps the core (the throttled cycle cannot preempt
			// it), then a switch picks another CFS task over the cycle:
			// the throttling held from the wake-up on.
			recs: []record{
				sw(d-500*us, cycleTID, 555, 120, "stress-ng-cpu", 1),
				ev(d+1*us, kindWakeup, 555, cycleTID),
				sw(d+3000*us, 555, 556, 120, "stress-ng-cpu", 0),
				sw(d+5000*us, 556, cycleTID, cyclePrio, "cycle", 0),
				sw(d+5100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 5002*us, end: d + 5050*us}, want: ClassThrottling, share: 0.99},
		{name: "woken into throttling that began before the deadline, no switch until it ends",
			// A FIFO task below the cycle used up the real-time runtime
			// and was switched out runnable for a CFS task: throttling.
			// Switches among CFS tasks follow before the deadline; the
			// cycle's wake-up then switches nothing until the throttling
			// ends.
			recs: []record{
				sw(d-900*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-800*us, 0, 4711, 49, "ecthrottlehog", 0),
				swFrom(d-300*us, 4711, 49, 555, 120, "stress-ng-cpu", 0),
				swFrom(d-200*us, 555, 120, 556, 120, "stress-ng-io", 0),
				ev(d+1*us, kindWakeup, 556, cycleTID),
				swFrom(d+20000*us, 556, 120, cycleTID, cyclePrio, "cycle", 0),
				sw(d+20100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 20002*us, end: d + 20050*us}, want: ClassThrottling, share: 0.99},
		{name: "the cycle sleeps and a CFS task is picked over a preempted real-time task: throttling",
			// The hog (FIFO below the cycle) was preempted by the cycle;
			// when the cycle sleeps, the core picks a kworker over the
			// runnable hog — the throttling begins there.
			recs: []record{
				swFrom(d-1000*us, 4711, 49, cycleTID, cyclePrio, "cycle", 0),
				swFrom(d-970*us, cycleTID, cyclePrio, 47, 100, "kworker/1:1H", 1),
				swFrom(d-500*us, 47, 100, 555, 120, "stress-ng-cpu", 1),
				ev(d+8*us, kindWakeup, 555, cycleTID),
				swFrom(d+50000*us, 555, 120, cycleTID, cyclePrio, "cycle", 0),
				sw(d+50100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 50002*us, end: d + 50050*us}, want: ClassThrottling, share: 0.99},
		{name: "due during throttling, its wake-up not traced here: throttling, not a late timer",
			recs: []record{
				swFrom(d-1000*us, 4711, 49, cycleTID, cyclePrio, "cycle", 0),
				swFrom(d-970*us, cycleTID, cyclePrio, 555, 120, "stress-ng-cpu", 1),
				swFrom(d+300000*us, 555, 120, cycleTID, cyclePrio, "cycle", 0),
				sw(d+300100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 300002*us, end: d + 300050*us}, want: ClassThrottling, share: 0.99},
		{name: "the preempted real-time task migrated away: not throttling",
			recs: []record{
				swFrom(d-1000*us, 4711, 49, cycleTID, cyclePrio, "cycle", 0),
				{ts: d - 990*us, kind: kindMigrate, pid: cycleTID, nextPID: 4711, nextPrio: 49, num: 0},
				swFrom(d-970*us, cycleTID, cyclePrio, 555, 120, "stress-ng-cpu", 1),
				ev(d+8*us, kindWakeup, 555, cycleTID),
				swFrom(d+3000*us, 555, 120, cycleTID, cyclePrio, "cycle", 0),
				sw(d+3100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 3002*us, end: d + 3050*us}, want: ClassTask, wantPID: 555, share: 0.99},
		{name: "a real-time task ran after the throttling: over, a CFS task in the kernel holds the cycle",
			recs: []record{
				sw(d-900*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-800*us, 0, 4711, 49, "ecthrottlehog", 0),
				swFrom(d-300*us, 4711, 49, 555, 120, "stress-ng-cpu", 0),
				swFrom(d-250*us, 555, 120, 4711, 49, "ecthrottlehog", 0),
				swFrom(d-200*us, 4711, 49, 556, 120, "stress-ng-io", 1),
				ev(d+1*us, kindWakeup, 556, cycleTID),
				swFrom(d+3000*us, 556, 120, cycleTID, cyclePrio, "cycle", 0),
				sw(d+3100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 3002*us, end: d + 3050*us}, want: ClassTask, wantPID: 556, share: 0.99},
		{name: "the ring lost events in the window: incomplete, nothing claimed",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-400*us, 0, 4711, 9, "hog", 0),
				{ts: d + 1500*us, kind: kindGap, pid: -1},
				sw(d+3000*us, 4711, cycleTID, cyclePrio, "cycle", 1),
				sw(d+3100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 3005*us, end: d + 3090*us}, want: ClassUnknown, share: 1},
		{name: "the ring lost events before the window's last switch: complete",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				{ts: d - 450*us, kind: kindGap, pid: -1},
				sw(d-400*us, 0, 4711, 9, "hog", 0),
				ev(d+2*us, kindWakeup, 4711, cycleTID),
				sw(d+3000*us, 4711, cycleTID, cyclePrio, "cycle", 1),
				sw(d+3100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 3005*us, end: d + 3090*us}, want: ClassTask, wantPID: 4711, share: 0.99},
		{name: "the ring lost events just after the window: incomplete",
			// The gap's events are younger than the record before it,
			// which is inside the window.
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				sw(d-400*us, 0, 4711, 9, "hog", 0),
				ev(d+2*us, kindWakeup, 4711, cycleTID),
				sw(d+3000*us, 4711, cycleTID, cyclePrio, "cycle", 1),
				{ts: d + 3050*us, kind: kindGap, pid: -1},
				sw(d+3100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 3005*us, end: d + 3090*us}, want: ClassUnknown, share: 1},
		{name: "a CFS task in the kernel, then the cycle: not throttling",
			recs: []record{
				sw(d-500*us, cycleTID, 555, 120, "stress-ng-cpu", 1),
				ev(d+1*us, kindWakeup, 555, cycleTID),
				sw(d+3000*us, 555, cycleTID, cyclePrio, "cycle", 0),
				sw(d+3100*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 3002*us, end: d + 3050*us}, want: ClassTask, wantPID: 555, share: 0.99},
		{name: "an overrun: the cycle preempted by an irq and a kworker",
			recs: []record{
				sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1),
				ev(d+1*us, kindWakeup, 0, cycleTID),
				sw(d+2*us, 0, cycleTID, cyclePrio, "cycle", 0),
				ev(d+100*us, kindIRQEntry, cycleTID, 24),
				ev(d+300*us, kindIRQExit, cycleTID, 24),
				sw(d+310*us, cycleTID, 42, 0, "kworker/1:1", 0),
				{ts: d + 311*us, kind: kindWorkStart, pid: 42, fn: 0xabc},
				{ts: d + 1500*us, kind: kindWorkEnd, pid: 42},
				sw(d+1501*us, 42, cycleTID, cyclePrio, "cycle", 0),
				sw(d+1600*us, cycleTID, 0, 120, "swapper/1", 1),
			},
			w: window{deadline: d, wake: d + 4*us, end: d + 1590*us, overrun: true}, want: ClassKernelWork, share: 0.8},
		{name: "no trace of the window",
			recs: []record{sw(d-500*us, cycleTID, 0, 120, "swapper/1", 1)},
			w:    window{deadline: d, wake: d + 300*us, end: d + 350*us}, want: ClassUnknown, share: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sp := attribute(c.recs, c.w, id, fakeNames{})
			if len(sp.Causes) == 0 {
				t.Fatalf("no causes: %+v", sp)
			}
			top := sp.Causes[0]
			if top.Class != c.want || top.Share < c.share || (c.wantPID != 0 && top.PID != c.wantPID) {
				t.Errorf("top cause %+v, want %v (pid %d) with ≥ %.2f; all: %+v", top, c.want, c.wantPID, c.share, sp.Causes)
			}
			var sum time.Duration
			for _, cs := range sp.Causes {
				sum += cs.Time
			}
			if sum != sp.Excess {
				t.Errorf("causes sum to %v, excess %v", sum, sp.Excess)
			}
		})
	}
}

// TestTraceKeepsTheNewest adds records past the buffer's size and trims
// them as polls do: what is kept is always the newest, in order, and the
// buffer never grows.
func TestTraceKeepsTheNewest(t *testing.T) {
	const size = 64
	tr := trace{buf: make([]record, 0, size)}
	var next int64
	for poll := 0; poll < 50; poll++ {
		for range poll % 7 * 5 { // 0 to 30 records a poll
			tr.add(record{ts: next})
			next++
		}
		recs := tr.records()
		if len(recs) > 0 {
			tr.trim(recs[len(recs)-1].ts - 40) // keep 40 of history
		}
		recs = tr.records()
		if cap(tr.buf) != size {
			t.Fatalf("poll %d: buffer of %d, want %d", poll, cap(tr.buf), size)
		}
		if len(recs) > 41 {
			t.Fatalf("poll %d: %d records kept, want at most 41", poll, len(recs))
		}
		for i, r := range recs {
			if want := next - int64(len(recs)) + int64(i); r.ts != want {
				t.Fatalf("poll %d: record %d at %d, want %d", poll, i, r.ts, want)
			}
		}
	}
	// Without trimming, a full buffer loses its oldest quarter.
	tr = trace{buf: make([]record, 0, size)}
	for i := range int64(size + 1) {
		tr.add(record{ts: i})
	}
	if recs := tr.records(); len(recs) != size-size/4+1 || recs[0].ts != size/4 || recs[len(recs)-1].ts != size {
		t.Errorf("full buffer: %d records, %d to %d; want %d, %d to %d", len(recs), recs[0].ts, recs[len(recs)-1].ts, size-size/4+1, size/4, size)
	}
}

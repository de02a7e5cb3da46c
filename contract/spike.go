package contract

import (
	"fmt"
	"time"
)

// SpikeClass is a bounded class of the causes of a late cycle (a
// cycle-spike event): the label value of the spike metrics. The
// culprits' names (a task's comm and pid, an irq's name, a workqueue
// function) are in SpikeCause.Name, in the event and the toolbox, never
// in a label.
type SpikeClass uint8

// The classes of the causes of a spike.
const (
	// SpikeHost: time none of the kernel's events on the cycle's core
	// explains — the core idle while the cycle's timer should have fired
	// (a halted or preempted vCPU, an SMI).
	SpikeHost SpikeClass = iota
	// SpikeTask: another task ran on the core.
	SpikeTask
	// SpikeCycleProcess: another thread of the cycle process ran.
	SpikeCycleProcess
	// SpikeIRQ: a hard interrupt (a device's, or a system vector: local
	// timer, IPIs).
	SpikeIRQ
	// SpikeSoftirq: a softirq (NET_RX, TIMER, RCU …).
	SpikeSoftirq
	// SpikeKernelWork: a workqueue item.
	SpikeKernelWork
	// SpikeKernelMemory: memory management: compaction, THP collapse,
	// reclaim, page faults of the cycle process.
	SpikeKernelMemory
	// SpikeThrottling: the cycle was runnable and lower-priority work
	// ran: RT throttling (sched_rt_runtime_us, the fair server).
	SpikeThrottling
	// SpikeUnknown: the trace lost events in the window; nothing is
	// attributed.
	SpikeUnknown

	numSpikeClasses
)

var spikeClassNames = [numSpikeClasses]string{"host", "task", "cycle-process", "irq", "softirq", "kernel-work",
	"kernel-memory", "rt-throttling", "unknown"}

// String is the class's label value.
func (c SpikeClass) String() string {
	if c < numSpikeClasses {
		return spikeClassNames[c]
	}
	return fmt.Sprintf("SpikeClass(%d)", uint8(c))
}

// SpikeClasses returns every class in a fresh slice: the label set.
func SpikeClasses() []SpikeClass {
	cs := make([]SpikeClass, numSpikeClasses)
	for i := range cs {
		cs[i] = SpikeClass(i)
	}
	return cs
}

// SpikeCause is one cause of a spike and the time it took.
type SpikeCause struct {
	// Class is its class.
	Class SpikeClass
	// Name identifies the culprit within its class ("hog/4711 FIFO 90",
	// "NET_RX", "irq 24 virtio0-input.0", "workqueue vmstat_update").
	Name string
	// PID is the culprit task's pid, 0 when not a task.
	PID int
	// Time is how long it held the core in the window.
	Time time.Duration
	// Share is Time's share of the spike's excess, 0..1.
	Share float64
}

// CycleSpike is one late cycle, explained (the cycle-spike event).
type CycleSpike struct {
	// Cycle is the cycle's number.
	Cycle uint64
	// Deadline, Wake and End are the cycle's times (CLOCK_MONOTONIC ns).
	Deadline, Wake, End int64
	// Overrun is set when the job ended after the next deadline.
	Overrun bool
	// Late is the wake-up latency (Wake − Deadline).
	Late time.Duration
	// Excess is the time in the window [Deadline, Wake] ([Deadline,
	// End] for an overrun) the cycle thread did not run: the sum of the
	// causes' times.
	Excess time.Duration
	// Causes are the causes, largest first.
	Causes []SpikeCause
	// Steal is the steal time the host reported for the core since the
	// spike before.
	Steal time.Duration
	// Incomplete is set when the trace lost events in the window.
	Incomplete bool
}

// Top is the largest cause's class; SpikeUnknown without causes.
func (s *CycleSpike) Top() SpikeClass {
	if len(s.Causes) == 0 {
		return SpikeUnknown
	}
	return s.Causes[0].Class
}

// SpikeView is how every output shows a CycleSpike as JSON (the MQTT
// cycle-spike event, /spikes, ecagent spikes --json): times in µs.
type SpikeView struct {
	Cycle      uint64           `json:"cycle"`
	Deadline   int64            `json:"deadline_mono_ns"`
	Top        string           `json:"cause"`
	LateUS     float64          `json:"late_us"`
	ExcessUS   float64          `json:"excess_us"`
	Overrun    bool             `json:"overrun"`
	StealUS    float64          `json:"steal_us,omitempty"`
	Incomplete bool             `json:"incomplete,omitempty"`
	Causes     []SpikeCauseView `json:"causes"`
}

// SpikeCauseView is one cause in a SpikeView.
type SpikeCauseView struct {
	Class  string  `json:"class"`
	Name   string  `json:"name"`
	PID    int     `json:"pid,omitempty"`
	TimeUS float64 `json:"time_us"`
	Share  float64 `json:"share"`
}

// View returns s as every output shows it.
func (s *CycleSpike) View() SpikeView {
	us := func(d time.Duration) float64 { return float64(d.Round(100*time.Nanosecond)) / 1e3 }
	v := SpikeView{Cycle: s.Cycle, Deadline: s.Deadline, Top: s.Top().String(), LateUS: us(s.Late), ExcessUS: us(s.Excess), Overrun: s.Overrun,
		StealUS: us(s.Steal), Incomplete: s.Incomplete, Causes: make([]SpikeCauseView, len(s.Causes))}
	for i, c := range s.Causes {
		v.Causes[i] = SpikeCauseView{Class: c.Class.String(), Name: c.Name, PID: c.PID, TimeUS: us(c.Time),
			Share: float64(int(c.Share*1000+0.5)) / 1000}
	}
	return v
}

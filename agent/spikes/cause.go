package spikes

import (
	"fmt"
	"time"
)

// Class is a bounded class of causes: the label value of the spike
// metrics. The culprits' names are in Cause.Name, never in a label.
type Class uint8

// The classes of causes.
const (
	// ClassHost: time none of the kernel's events on the core explains
	// — the CPU idle while the cycle's timer should have fired (a halted
	// or preempted vCPU, an SMI, steal time).
	ClassHost Class = iota
	// ClassTask: another task ran on the core (Name: comm/pid,
	// policy/priority).
	ClassTask
	// ClassSelf: another thread of the cycle process ran on the core.
	ClassSelf
	// ClassIRQ: a hard interrupt handler (Name: irq number and name).
	ClassIRQ
	// ClassSoftirq: a softirq (Name: its vector, NET_RX, TIMER …).
	ClassSoftirq
	// ClassKernelWork: a workqueue item (Name: its function).
	ClassKernelWork
	// ClassKernelMemory: memory management: compaction, THP collapse
	// (khugepaged, kcompactd), page faults of the cycle process.
	ClassKernelMemory
	// ClassThrottling: the cycle was runnable and lower-priority work
	// ran: RT throttling (sched_rt_runtime_us, the fair server).
	ClassThrottling
	// ClassUnknown: the trace lost events in the window (its ring
	// overwrote them before they were read): no attribution is made.
	ClassUnknown
	numClasses
)

var classNames = [numClasses]string{"host", "task", "cycle-process", "irq", "softirq", "kernel-work", "kernel-memory", "rt-throttling", "unknown"}

// String is the class's label value.
func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Classes returns every class, in a fresh slice: the bounded label set.
func Classes() []Class {
	cs := make([]Class, numClasses)
	for i := range cs {
		cs[i] = Class(i)
	}
	return cs
}

// Cause is one cause of a spike and the time it took.
type Cause struct {
	// Class is its class.
	Class Class
	// Name identifies the culprit within its class ("hog/4711 FIFO 90",
	// "NET_RX", "irq 24 virtio0-input.0", "vmstat_update").
	Name string
	// PID is the culprit task's pid, 0 when not a task.
	PID int
	// Time is how long it held the core in the window.
	Time time.Duration
	// Share is Time's share of the spike's excess, 0..1.
	Share float64
}

// Spike is one late cycle, explained.
type Spike struct {
	// Cycle is the cycle's number.
	Cycle uint64
	// Deadline, Wake and End are the cycle's times (CLOCK_MONOTONIC ns).
	Deadline, Wake, End int64
	// Overrun is set when the job ended after the next deadline.
	Overrun bool
	// Late is the wake-up latency (Wake − Deadline).
	Late time.Duration
	// Excess is the time in the window [Deadline, Wake], or [Deadline,
	// End] for an overrun, that the cycle thread did not run: the sum of
	// the causes' times.
	Excess time.Duration
	// Causes are the causes, largest first.
	Causes []Cause
	// Steal is the steal time the host reported for the core (from
	// /proc/stat) since the spike before, when it reported any.
	Steal time.Duration
	// Incomplete is set when the trace lost events in the window.
	Incomplete bool
}

// Top is the largest cause's class, ClassUnknown for a spike without
// causes.
func (s *Spike) Top() Class {
	if len(s.Causes) == 0 {
		return ClassUnknown
	}
	return s.Causes[0].Class
}

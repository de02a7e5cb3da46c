// Package spikes explains the cycle's late wake-ups and overruns: a
// collector in the agent process keeps the kernel's account of the
// cycle's CPU (package tracefs: scheduler, interrupt, softirq, workqueue
// and memory-management events in a small overwriting ring) and, for
// each cycle that came later than a threshold, splits the time between
// its deadline and its wake-up (and its job's end, when it overran) among
// the causes that took it: tasks that ran on the core, hard interrupts,
// softirqs, kernel work, kernel memory management, RT throttling, and
// what none of these explains (the host: a halted or preempted vCPU).
//
// It never runs in the cycle process: the cycle reports every cycle's
// deadline, wake-up and end in its samples (shm.Sample), and the agent
// hands the late ones to the collector.
package spikes

package shm

import "runtime"

// Heartbeat is the cycle process's sign of life in the segment header:
// its PID, and the number and CLOCK_MONOTONIC time of its latest cycle.
// The agent reads it to tell a running cycle from a dead or stuck one,
// also after the agent itself restarted and the cycle is no longer its
// child.
type Heartbeat struct {
	line *heartbeatLine
}

// Beat records that cycle ran at monoNanos. Only the cycle process calls
// it, once per cycle; it never blocks and never allocates.
func (h *Heartbeat) Beat(cycle uint64, monoNanos int64) {
	seq := h.line.Seq.Load()
	odd := seq | 1
	if odd != seq {
		h.line.Seq.Store(odd)
	}
	h.line.Cycle.Store(cycle)
	h.line.Mono.Store(monoNanos)
	h.line.Seq.Store(odd + 1)
}

// Read returns the latest beat. ok is false before the first beat, or when
// a beat was in progress through every one of a bounded number of
// attempts (a cycle process that died mid-beat leaves it so).
func (h *Heartbeat) Read() (cycle uint64, monoNanos int64, ok bool) {
	for range snapshotTries {
		s1 := h.line.Seq.Load()
		if s1 == 0 {
			return 0, 0, false
		}
		if s1&1 == 0 {
			cycle, monoNanos = h.line.Cycle.Load(), h.line.Mono.Load()
			if h.line.Seq.Load() == s1 {
				return cycle, monoNanos, true
			}
		}
		runtime.Gosched()
	}
	return 0, 0, false
}

// SetCyclePID records the PID of the cycle process using the segment. The
// cycle process calls it once it has attached.
func (h *Heartbeat) SetCyclePID(pid int) { h.line.CyclePID.Store(int64(pid)) }

// CyclePID returns the PID SetCyclePID recorded, 0 if none.
func (h *Heartbeat) CyclePID() int { return int(h.line.CyclePID.Load()) }

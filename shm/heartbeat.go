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

// CountFrames records the cyclic frames sent (or tried: a frame the link
// refused counts as sent and lost) and lost since cyclic operation
// began, as running totals. Only the cycle process calls it,
// once per cycle; it never blocks and never allocates. A sample says
// whether a cycle lost a frame (SampleLostFrame); these totals say how
// many frames, for a cycle of several frames can lose more than one.
func (h *Heartbeat) CountFrames(sent, lost uint64) {
	h.line.FramesSent.Store(sent)
	h.line.FramesLost.Store(lost)
}

// Frames returns the totals CountFrames recorded last, zeros before the
// first cycle. The two are stored one after the other, sent first, and
// read in the opposite order: read while a cycle writes them, sent may
// count that cycle's frames before lost counts its losses, never the
// other way round, so lost never exceeds sent.
func (h *Heartbeat) Frames() (sent, lost uint64) {
	lost = h.line.FramesLost.Load()
	sent = h.line.FramesSent.Load()
	return sent, lost
}

// CountLate records, as a running total, the cyclic frames counted lost
// (CountFrames) whose answer came after all, late. Only the cycle process
// calls it, once per cycle after CountFrames; it never blocks and never
// allocates.
func (h *Heartbeat) CountLate(late uint64) { h.line.FramesLate.Store(late) }

// Late returns the total CountLate recorded last. Read before Frames, it
// never exceeds the frames lost Frames returns: the late frames are
// stored after the lost ones, and a frame is lost before it is late.
func (h *Heartbeat) Late() uint64 { return h.line.FramesLate.Load() }

// CountLink records the link's receive counters as running totals since
// the cycle process opened it: the frames that reached its receive queue
// (for a raw socket, those its kernel filter passed) and those of them
// the kernel dropped because the queue was full (PACKET_STATISTICS). Only
// the cycle process calls it, at a low rate; it never blocks and never
// allocates.
func (h *Heartbeat) CountLink(received, drops uint64) {
	h.line.LinkReceived.Store(received)
	h.line.LinkDrops.Store(drops)
}

// Link returns the totals CountLink recorded last, zeros before the first
// or on a link that does not count. Received is stored first and read
// last, so drops never exceed received.
func (h *Heartbeat) Link() (received, drops uint64) {
	drops = h.line.LinkDrops.Load()
	received = h.line.LinkReceived.Load()
	return received, drops
}

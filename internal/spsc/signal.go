package spsc

import (
	"sync/atomic"
	"time"
)

// Signal wakes goroutines that wait for something to happen. Notify never
// blocks and takes no lock: it bumps a counter and, only when a goroutine
// sleeps on it, wakes it with one futex system call. Waiters take the
// counter with Seq before they look at the state they wait for, then Wait
// for it to change, so a notification between the two is never missed.
// The zero Signal is ready to use; it must not be copied after first use.
type Signal struct {
	seq     atomic.Uint32
	waiters atomic.Int32
}

// Seq returns the notification count, to pass to Wait.
func (s *Signal) Seq() uint32 { return s.seq.Load() }

// Notify wakes every goroutine waiting on s. It never blocks.
func (s *Signal) Notify() {
	s.seq.Add(1)
	if s.waiters.Load() > 0 {
		wake(&s.seq)
	}
}

// Wait blocks until the count differs from seq or timeout passes, and
// reports whether it changed. It may return early (a spurious wake-up):
// callers look at their state again.
func (s *Signal) Wait(seq uint32, timeout time.Duration) bool {
	if s.seq.Load() != seq {
		return true
	}
	if timeout <= 0 {
		return false
	}
	s.waiters.Add(1)
	sleep(&s.seq, seq, timeout)
	s.waiters.Add(-1)
	return s.seq.Load() != seq
}

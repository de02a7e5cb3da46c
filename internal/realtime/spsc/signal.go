package spsc

import (
	"sync/atomic"
	"time"
)

// Signal wakes goroutines that wait for something to happen. Notify never
// blocks and takes no lock: it bumps a counter and, only when a goroutine
// waits on it, wakes it with one system call that does not block. Waiters
// take the counter with Seq before they look at the state they wait for,
// then Wait for it to change, so a notification between the two is never
// missed. The zero Signal is ready to use; it must not be copied after
// first use.
//
// A waiter parks in the Go scheduler (on Linux: on a timerfd of its own,
// through the runtime's network poller) rather than in a blocking system
// call. A goroutine blocked in a system call keeps its P until the
// runtime's sysmon thread takes it back, 20 µs to 20 ms later; in the
// cycle process, where the cycle thread holds one P for good and yields
// it every few milliseconds, the thread that takes that P at a yield ran
// a waiter first, and the cycle then waited for sysmon to retake the P
// from the waiter's system call: 10 to 20 ms, the cycle process's longest
// stalls (docs/performance.md). A parked goroutine gives its P up at
// once. When every parking place is taken (more than parkPlaces waiters
// at once), or the host refuses a timerfd or its poller, Wait sleeps on
// a futex as before.
type Signal struct {
	seq      atomic.Uint32
	parked   atomic.Int32 // waiters in a parking place
	sleepers atomic.Int32 // waiters on the futex
	parking  parking
}

// Seq returns the notification count, to pass to Wait.
func (s *Signal) Seq() uint32 { return s.seq.Load() }

// Notify wakes every goroutine waiting on s. It never blocks and does not
// allocate.
func (s *Signal) Notify() {
	s.seq.Add(1)
	if s.parked.Load() > 0 {
		s.parking.wakeAll()
	}
	if s.sleepers.Load() > 0 {
		wake(&s.seq)
	}
}

// Prepare makes n parking places now (up to parkPlaces), so that as many
// waiters at once later park without allocating: making a place
// allocates (its timerfd's os.File), and a first wait in the cycle's
// steady state would count. Call it where the owner is made.
func (s *Signal) Prepare(n int) { s.parking.prepare(n) }

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
	if p := s.parking.take(); p != nil {
		s.parked.Add(1)
		armed := p.arm(timeout)
		if armed && s.seq.Load() == seq { // a Notify before arm is seen here
			p.park()
		}
		if armed {
			p.disarm()
		}
		s.parked.Add(-1)
		s.parking.release(p)
		if armed {
			return s.seq.Load() != seq
		}
	}
	s.sleepers.Add(1)
	sleep(&s.seq, seq, timeout)
	s.sleepers.Add(-1)
	return s.seq.Load() != seq
}

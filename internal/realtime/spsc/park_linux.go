package spsc

import (
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// parkPlaces is how many goroutines can park on one Signal at once;
// further waiters sleep on its futex.
const parkPlaces = 16

// The states of a parking place. A waiter takes a free place, arms it
// before it parks and disarms it after; Notify moves an armed place to
// woken and makes its timerfd expire, once.
const (
	placeFree uint32 = iota
	placeTaken
	placeArmed
	placeWoken
)

// parking holds a Signal's parking places, each made by Prepare or on
// first use.
type parking struct {
	places [parkPlaces]place
	// used is how many places from the first have ever been taken:
	// Notify looks at those.
	used atomic.Int32
}

// place is one parking place: a timerfd that the runtime's poller
// watches, on which one waiter at a time parks. The waiter sets it to
// expire at its timeout; Notify sets it to expire now. No Go timer is
// involved: a Go timer's deadline goes into the timer heap of whichever
// P runs the waiter, and growing that heap allocates, which the cycle's
// steady state would count (and a heap the cycle's P has for good is
// not grown beforehand).
type place struct {
	state atomic.Uint32
	// Set by the waiter that makes the place (ready), before its first
	// arm; Notify reads fd and now only after seeing it armed.
	ready bool
	fd    int
	conn  syscall.RawConn       // keeps its os.File, and so the fd, open
	read  func(fd uintptr) bool // reads the expirations; false: none yet
	now   unix.ItimerSpec       // expire at once (Notify)
	at    unix.ItimerSpec       // expire at the waiter's timeout
	buf   [8]byte
}

// take returns a free place, made ready, or nil when every place is
// taken or the host refuses a timerfd.
func (pk *parking) take() *place {
	for i := range pk.places {
		if p := pk.takeAt(i); p != nil {
			return p
		}
	}
	return nil
}

// takeAt takes place i if it is free and can be made ready.
func (pk *parking) takeAt(i int) *place {
	p := &pk.places[i]
	if !p.state.CompareAndSwap(placeFree, placeTaken) {
		return nil
	}
	if !p.ready && !p.make() {
		p.state.Store(placeFree)
		return nil
	}
	for {
		u := pk.used.Load()
		if int32(i) < u || pk.used.CompareAndSwap(u, int32(i)+1) {
			break
		}
	}
	return p
}

// prepare makes the first n places ready (those free now).
func (pk *parking) prepare(n int) {
	for i := range min(n, parkPlaces) {
		if p := pk.takeAt(i); p != nil {
			pk.release(p)
		}
	}
}

// release frees a place its waiter has disarmed.
func (pk *parking) release(p *place) { p.state.Store(placeFree) }

// wakeAll makes the timerfd of every armed place expire, once per
// arming. It runs on the notifier's thread (the cycle's): atomics and one
// timerfd_settime(2) per parked waiter, which does not block, and no
// allocation.
func (pk *parking) wakeAll() {
	n := int(pk.used.Load())
	for i := range n {
		p := &pk.places[i]
		if p.state.CompareAndSwap(placeArmed, placeWoken) {
			_, _, _ = unix.RawSyscall6(unix.SYS_TIMERFD_SETTIME, uintptr(p.fd), 0, uintptr(unsafe.Pointer(&p.now)), 0, 0, 0)
		}
	}
}

// make opens the place's timerfd, non-blocking so that the runtime's
// poller watches it.
func (p *place) make() bool {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "spsc-signal")
	conn, err := f.SyscallConn()
	// A file the poller did not take (its epoll set full) cannot be
	// waited on without blocking a thread: clearing its deadline says
	// which (it sets no timer).
	if err == nil {
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return false
	}
	p.now.Value.Nsec = 1
	p.fd, p.conn = fd, conn
	p.read = func(fd uintptr) bool {
		_, err := unix.Read(int(fd), p.buf[:])
		return !errors.Is(err, unix.EAGAIN)
	}
	p.ready = true
	return true
}

// arm sets the timerfd to expire after timeout, which also clears what an
// earlier expiry left, and lets Notify make it expire at once. It reports
// false when the timerfd cannot be set.
func (p *place) arm(timeout time.Duration) bool {
	p.at.Value = unix.NsecToTimespec(max(int64(timeout), 1))
	if unix.TimerfdSettime(p.fd, 0, &p.at, nil) != nil {
		return false
	}
	p.state.Store(placeArmed)
	return true
}

// park waits until the timerfd expires: Notify, or the timeout. The
// goroutine parks in the runtime's poller and its P runs other work.
func (p *place) park() { _ = p.conn.Read(p.read) }

// disarm stops Notify setting the timerfd and stops its timeout; an expiry
// Notify sets meanwhile is cleared by the next arm.
func (p *place) disarm() {
	p.state.Store(placeTaken)
	var off unix.ItimerSpec
	_ = unix.TimerfdSettime(p.fd, 0, &off, nil)
}

package spsc

import (
	"encoding/binary"
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
// woken and writes its eventfd once.
const (
	placeFree uint32 = iota
	placeTaken
	placeArmed
	placeWoken
)

// parking holds a Signal's parking places, each made on first use.
type parking struct {
	places [parkPlaces]place
	// used is how many places from the first have ever been taken:
	// Notify looks at those.
	used atomic.Int32
}

// place is one parking place: an eventfd that the runtime's poller
// watches, on which one waiter at a time parks.
type place struct {
	state atomic.Uint32
	// Set by the waiter that makes the place (ready), before its first
	// arm; Notify reads fd only after seeing it armed.
	ready bool
	fd    int
	file  *os.File
	conn  syscall.RawConn
	read  func(fd uintptr) bool // drains the eventfd; false: nothing yet
	one   [8]byte               // the eventfd increment Notify writes
	buf   [8]byte
}

// take returns a free place, made ready, or nil when every place is
// taken or the host refuses an eventfd.
func (pk *parking) take() *place {
	for i := range pk.places {
		p := &pk.places[i]
		if !p.state.CompareAndSwap(placeFree, placeTaken) {
			continue
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
	return nil
}

// release frees a place its waiter has disarmed.
func (pk *parking) release(p *place) { p.state.Store(placeFree) }

// wakeAll writes the eventfd of every armed place, once per arming. It
// runs on the notifier's thread (the cycle's): atomics and one write(2)
// per parked waiter, which does not block, and no allocation.
func (pk *parking) wakeAll() {
	n := int(pk.used.Load())
	for i := range n {
		p := &pk.places[i]
		if p.state.CompareAndSwap(placeArmed, placeWoken) {
			_, _, _ = unix.RawSyscall(unix.SYS_WRITE, uintptr(p.fd), uintptr(unsafe.Pointer(&p.one[0])), uintptr(len(p.one)))
		}
	}
}

// make opens the place's eventfd, non-blocking so that the runtime's
// poller watches it.
func (p *place) make() bool {
	fd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return false
	}
	f := os.NewFile(uintptr(fd), "spsc-signal")
	conn, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return false
	}
	binary.NativeEndian.PutUint64(p.one[:], 1)
	p.fd, p.file, p.conn = fd, f, conn
	p.read = func(fd uintptr) bool {
		_, err := unix.Read(int(fd), p.buf[:])
		return !errors.Is(err, unix.EAGAIN)
	}
	p.ready = true
	return true
}

// arm clears what an earlier Notify left in the eventfd and lets Notify
// write it again.
func (p *place) arm() {
	_, _ = unix.Read(p.fd, p.buf[:])
	p.state.Store(placeArmed)
}

// park waits until Notify writes the eventfd or timeout passes. The
// goroutine parks in the runtime's poller and its P runs other work.
func (p *place) park(timeout time.Duration) {
	if p.file.SetReadDeadline(time.Now().Add(timeout)) != nil {
		return
	}
	_ = p.conn.Read(p.read)
}

// disarm stops Notify writing the eventfd; what it wrote meanwhile is
// drained by the next arm.
func (p *place) disarm() { p.state.Store(placeTaken) }

//go:build linux

package link

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fdConn is the machinery shared by the descriptor-based links: a
// non-blocking socket, waited on with ppoll(2) together with an eventfd that
// Close signals, read with read(2) and written with sendto(2). After
// construction none of its hot-path methods allocates.
type fdConn struct {
	name string
	fd   int
	wake int // eventfd, readable once Close has begun

	// to is the destination passed to sendto, as the kernel reads it: a
	// pre-built address for a packet socket (toLen bytes), none (nil, 0)
	// for a connected socket.
	to        *unix.RawSockaddrLinklayer
	toLen     uintptr
	sendFlags int
	// eofIsClose says that a read of zero bytes means the peer closed
	// (stream-like sockets such as SOCK_SEQPACKET).
	eofIsClose bool

	// mu is held shared by every operation that uses fd and exclusively
	// by Close while it releases the descriptors, so that a descriptor is
	// never closed (and its number reused) under a running syscall.
	mu     sync.RWMutex
	closed atomic.Bool

	recvPoll [2]unix.PollFd // {fd, wake}, used by Recv only
	// The message header, its one vector and the control buffer of Poll's
	// recvmsg, which brings the kernel's receive time (SO_TIMESTAMPNS).
	pollMsg unix.Msghdr
	pollIov unix.Iovec
	pollOOB [8]uint64     // word-aligned, as control messages are
	spin    time.Duration // Recv reads without waiting this long first
	keepP   bool          // waits are raw system calls (WaitKeeper)
	timeout unix.Timespec // used by Recv only
	pad     [MinFrameSize]byte

	errs      presetErrors
	sendAgain error // send would block: the kernel's queue is full
	sendNoBuf error // the driver's queue is full (with qdisc bypass)
}

// newFDConn takes ownership of fd, which must be non-blocking: its reads
// and writes are raw system calls, which must not block. to is the
// destination of every frame, nil for a connected socket.
func newFDConn(name string, fd int, to *unix.SockaddrLinklayer, sendFlags int, eofIsClose bool) (*fdConn, error) {
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	c := &fdConn{
		name:       name,
		fd:         fd,
		wake:       wake,
		sendFlags:  sendFlags,
		eofIsClose: eofIsClose,
		errs:       newPresetErrors(name),
		sendAgain:  &OpError{Op: "send", Link: name, Err: unix.EAGAIN},
		sendNoBuf:  &OpError{Op: "send", Link: name, Err: unix.ENOBUFS},
	}
	// The kernel's receive time of every frame, read by Poll. A socket
	// that refuses it still works; Poll then reports no receive time.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	if to != nil {
		c.to = &unix.RawSockaddrLinklayer{Family: unix.AF_PACKET, Protocol: to.Protocol, Ifindex: int32(to.Ifindex),
			Hatype: to.Hatype, Pkttype: to.Pkttype, Halen: to.Halen, Addr: to.Addr}
		c.toLen = unix.SizeofSockaddrLinklayer
	}
	c.pollMsg.Iov = &c.pollIov
	c.pollMsg.SetIovlen(1)
	c.recvPoll[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	c.recvPoll[1] = unix.PollFd{Fd: int32(wake), Events: unix.POLLIN}
	return c, nil
}

// send transmits frame, padded to MinFrameSize. It never blocks: sendto(2)
// on the non-blocking socket is a raw system call, so the runtime does not
// hand the caller's P off for it, and sysmon cannot take the P of a cycle
// thread in the middle of its send (it would wait for the P back).
func (c *fdConn) send(frame []byte) error {
	if len(frame) < HeaderSize {
		return &OpError{Op: "send", Link: c.name, Err: fmt.Errorf("%w: %d bytes, want at least %d",
			ErrFrameSize, len(frame), HeaderSize)}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return c.errs.sendClosed
	}
	if len(frame) < MinFrameSize {
		n := copy(c.pad[:], frame)
		clear(c.pad[n:])
		frame = c.pad[:]
	}
	for {
		_, _, err := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(c.fd), uintptr(unsafe.Pointer(&frame[0])), uintptr(len(frame)),
			uintptr(c.sendFlags), uintptr(unsafe.Pointer(c.to)), c.toLen)
		switch err {
		case 0:
			return nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return c.sendAgain
		case unix.ENOBUFS:
			return c.sendNoBuf
		case unix.EPIPE, unix.ECONNRESET:
			return c.errs.sendClosed
		default:
			return c.errs.sendErr(c.name, err)
		}
	}
}

// recv waits for a frame until deadline (forever for the zero time) and
// copies it into buf.
func (c *fdConn) recv(buf []byte, deadline time.Time) (int, error) {
	if len(buf) == 0 {
		return 0, &OpError{Op: "recv", Link: c.name, Err: io.ErrShortBuffer}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.spin > 0 {
		if n, err, done := c.spinRecv(buf, deadline); done {
			return n, err
		}
	}
	for {
		if err := c.waitLocked(deadline); err != nil {
			return 0, err
		}
		n, err := c.read(buf)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			continue
		case err == unix.ECONNRESET:
			return 0, c.errs.recvClosed
		case err != nil:
			return 0, c.errs.recvErr(c.name, err)
		case n == 0 && c.eofIsClose:
			return 0, c.errs.recvClosed
		}
		return n, nil
	}
}

// wait waits until a frame can be read, deadline passes (never for the
// zero time) or the link is closed.
func (c *fdConn) wait(deadline time.Time) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.waitLocked(deadline)
}

// waitLocked is wait with c.mu held shared.
func (c *fdConn) waitLocked(deadline time.Time) error {
	for {
		if c.closed.Load() {
			return c.errs.recvClosed
		}
		var timeout *unix.Timespec
		if !deadline.IsZero() {
			// A deadline in the past still polls once without waiting,
			// so a frame that has already arrived is seen.
			c.timeout = unix.NsecToTimespec(int64(max(time.Until(deadline), 0)))
			timeout = &c.timeout
		}
		c.recvPoll[0].Revents = 0
		c.recvPoll[1].Revents = 0
		ready, err := c.ppoll(timeout)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return &OpError{Op: "recv", Link: c.name, Err: fmt.Errorf("ppoll: %w", err)}
		case c.recvPoll[1].Revents != 0:
			return c.errs.recvClosed
		case ready == 0:
			return c.errs.recvTimeout
		}
		return nil
	}
}

// ppoll waits for the socket or the close event, as a raw system call
// when c.keepP is set.
func (c *fdConn) ppoll(timeout *unix.Timespec) (int, error) {
	if !c.keepP {
		return unix.Ppoll(c.recvPoll[:], timeout, nil)
	}
	n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&c.recvPoll[0])), uintptr(len(c.recvPoll)),
		uintptr(unsafe.Pointer(timeout)), 0, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// poll reads a frame that has arrived, without waiting, with recvmsg(2)
// as a raw system call: it cannot block, so the runtime need not hand the
// caller's P off. received is the kernel's receive time (CLOCK_REALTIME
// ns), 0 when the control message does not hold it.
func (c *fdConn) poll(buf []byte) (n int, received int64, err error) {
	if len(buf) == 0 {
		return 0, 0, &OpError{Op: "recv", Link: c.name, Err: io.ErrShortBuffer}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return 0, 0, c.errs.recvClosed
	}
	c.pollIov.Base = &buf[0]
	c.pollIov.SetLen(len(buf))
	oob := unsafe.Slice((*byte)(unsafe.Pointer(&c.pollOOB[0])), 8*len(c.pollOOB))
	c.pollMsg.Control = &oob[0]
	c.pollMsg.SetControllen(len(oob))
	c.pollMsg.Flags = 0
	for {
		r, _, errno := unix.RawSyscall(unix.SYS_RECVMSG, uintptr(c.fd), uintptr(unsafe.Pointer(&c.pollMsg)), unix.MSG_DONTWAIT)
		switch {
		case errno == unix.EINTR:
			continue
		case errno == unix.EAGAIN:
			return 0, 0, nil
		case errno == unix.ECONNRESET:
			return 0, 0, c.errs.recvClosed
		case errno != 0:
			return 0, 0, c.errs.recvErr(c.name, errno)
		case r == 0 && c.eofIsClose:
			return 0, 0, c.errs.recvClosed
		}
		return int(r), receiveTime(oob[:c.pollMsg.Controllen]), nil
	}
}

// packetStats reads the kernel's counters of a packet socket into st and
// resets them (getsockopt PACKET_STATISTICS), as a raw system call: it
// cannot block, and allocates nothing.
func (c *fdConn) packetStats(st *unix.TpacketStats) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return c.errs.statsClosed
	}
	size := uint32(unsafe.Sizeof(*st))
	_, _, errno := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(c.fd), unix.SOL_PACKET, unix.PACKET_STATISTICS,
		uintptr(unsafe.Pointer(st)), uintptr(unsafe.Pointer(&size)), 0)
	if errno != 0 {
		return &OpError{Op: "stats", Link: c.name, Err: fmt.Errorf("getsockopt PACKET_STATISTICS: %w", errno)}
	}
	return nil
}

// receiveTime finds the SCM_TIMESTAMPNS control message in oob (as the
// kernel wrote it: aligned to the word size) and returns its time in ns,
// or 0.
func receiveTime(oob []byte) int64 {
	const align = int(unsafe.Sizeof(uintptr(0)))
	for off := 0; off+unix.SizeofCmsghdr <= len(oob); {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[off]))
		n := int(h.Len)
		if n < unix.SizeofCmsghdr || off+n > len(oob) {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS &&
			n >= unix.SizeofCmsghdr+int(unsafe.Sizeof(unix.Timespec{})) {
			return (*unix.Timespec)(unsafe.Pointer(&oob[off+unix.SizeofCmsghdr])).Nano()
		}
		off += (n + align - 1) &^ (align - 1) // CMSG_ALIGN
	}
	return 0
}

// read reads a frame from the non-blocking socket into buf (not empty)
// with read(2), a raw system call, like poll's: it cannot block.
func (c *fdConn) read(buf []byte) (int, error) {
	n, _, errno := unix.RawSyscall(unix.SYS_READ, uintptr(c.fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// spinRecv reads without waiting until a frame comes, c.spin has passed or
// deadline is near; done is false when recv is to wait in ppoll after all.
// The caller holds c.mu.
func (c *fdConn) spinRecv(buf []byte, deadline time.Time) (n int, err error, done bool) {
	end := time.Now().Add(c.spin)
	if !deadline.IsZero() && deadline.Before(end) {
		end = deadline
	}
	for {
		if c.closed.Load() {
			return 0, c.errs.recvClosed, true
		}
		n, err := c.read(buf)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
		case err == unix.ECONNRESET:
			return 0, c.errs.recvClosed, true
		case err != nil:
			return 0, c.errs.recvErr(c.name, err), true
		case n == 0 && c.eofIsClose:
			return 0, c.errs.recvClosed, true
		default:
			return n, nil, true
		}
		if !time.Now().Before(end) {
			return 0, nil, false
		}
	}
}

// close wakes a blocked recv through the eventfd, waits for the running
// operations to leave, then releases both descriptors. Later calls do
// nothing.
func (c *fdConn) close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, wakeErr := unix.Write(c.wake, one[:])

	c.mu.Lock()
	defer c.mu.Unlock()
	err := unix.Close(c.fd)
	if cerr := unix.Close(c.wake); err == nil {
		err = cerr
	}
	if err == nil {
		err = wakeErr
	}
	if err != nil {
		return &OpError{Op: "close", Link: c.name, Err: err}
	}
	return nil
}

// withFD runs fn with the descriptor while holding it open, or returns an
// error matching ErrClosed.
func (c *fdConn) withFD(op string, fn func(fd int) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return &OpError{Op: op, Link: c.name, Err: ErrClosed}
	}
	if err := fn(c.fd); err != nil {
		return &OpError{Op: op, Link: c.name, Err: err}
	}
	return nil
}

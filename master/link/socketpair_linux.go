//go:build linux

package link

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Compile-time check that FDLink is a Link.
var _ Link = (*FDLink)(nil)

// FDLink is a Link over one end of an AF_UNIX SOCK_SEQPACKET socket pair,
// which keeps frame boundaries; the other end may live in another process.
//
// One goroutine may Send while another Recvs; neither Send nor Recv may be
// called from two goroutines at once. Send never blocks: when the peer's
// queue is full it returns an error matching unix.EAGAIN. Once the peer
// has closed, Recv returns the frames still queued, then an error matching
// ErrClosed, and Send returns an error matching ErrClosed.
type FDLink struct {
	conn *fdConn
	addr hardwareAddr
}

// NewSocketPair returns a connected pair of links over a fresh AF_UNIX
// SOCK_SEQPACKET socket pair. End a has the address 02:ec:a7:00:00:01,
// end b 02:ec:a7:00:00:02.
func NewSocketPair() (a, b *FDLink, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &OpError{Op: "open", Link: "socketpair", Err: fmt.Errorf("socketpair: %w", err)}
	}
	if a, err = newFDLink("socketpair-a", fds[0], localAddr(1)); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, err
	}
	if b, err = newFDLink("socketpair-b", fds[1], localAddr(2)); err != nil {
		a.Close()
		unix.Close(fds[1])
		return nil, nil, err
	}
	return a, b, nil
}

// FileLink turns fd, an AF_UNIX SOCK_SEQPACKET socket such as one end of a
// pair inherited from a parent process, into a link. On success it owns fd
// (Close closes it) and has made it non-blocking; on error fd is left open.
// The link has the address 02:ec:a7:00:00:02, that of end b of
// NewSocketPair, the end usually handed to another process.
func FileLink(fd int) (*FDLink, error) {
	name := "fd-" + strconv.Itoa(fd)
	openErr := func(err error) error { return &OpError{Op: "open", Link: name, Err: err} }
	domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	if err != nil {
		return nil, openErr(fmt.Errorf("getsockopt SO_DOMAIN: %w", err))
	}
	typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err != nil {
		return nil, openErr(fmt.Errorf("getsockopt SO_TYPE: %w", err))
	}
	if domain != unix.AF_UNIX || typ != unix.SOCK_SEQPACKET {
		return nil, openErr(fmt.Errorf("descriptor is not an AF_UNIX SOCK_SEQPACKET socket (domain %d, type %d)", domain, typ))
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return nil, openErr(fmt.Errorf("set non-blocking: %w", err))
	}
	return newFDLink(name, fd, localAddr(2))
}

// FDLinkFromFile turns the socket behind f, for example os.NewFile(3, …) in
// a child started with exec.Cmd.ExtraFiles, into a link (see FileLink). It
// duplicates the descriptor: the caller still owns f and may close it. The
// duplicate shares f's file status, so f becomes non-blocking too.
func FDLinkFromFile(f *os.File) (*FDLink, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, &OpError{Op: "open", Link: f.Name(), Err: err}
	}
	dup := -1
	var dupErr error
	if err := rc.Control(func(fd uintptr) {
		dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, &OpError{Op: "open", Link: f.Name(), Err: err}
	}
	if dupErr != nil {
		return nil, &OpError{Op: "open", Link: f.Name(), Err: fmt.Errorf("dup: %w", dupErr)}
	}
	l, err := FileLink(dup)
	if err != nil {
		unix.Close(dup)
		return nil, err
	}
	return l, nil
}

func newFDLink(name string, fd int, addr hardwareAddr) (*FDLink, error) {
	conn, err := newFDConn(name, fd, nil, unix.MSG_NOSIGNAL, true)
	if err != nil {
		return nil, &OpError{Op: "open", Link: name, Err: err}
	}
	return &FDLink{conn: conn, addr: addr}, nil
}

// File returns a duplicate of the link's descriptor as an *os.File, to hand
// to another process through exec.Cmd.ExtraFiles. The caller closes it; the
// link stays open.
func (l *FDLink) File() (*os.File, error) {
	var f *os.File
	err := l.conn.withFD("file", func(fd int) error {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("dup: %w", err)
		}
		f = os.NewFile(uintptr(dup), l.conn.name)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f, nil
}

// Send transmits frame to the peer, zero-padded to MinFrameSize. It
// allocates nothing.
func (l *FDLink) Send(frame []byte) error { return l.conn.send(frame) }

// Recv waits until deadline (forever for the zero time) for the next frame
// from the peer and copies it into buf, truncated to len(buf). It
// allocates nothing, on timeout either.
func (l *FDLink) Recv(buf []byte, deadline time.Time) (int, error) {
	return l.conn.recv(buf, deadline)
}

// Wait waits until a frame can be read (Waiter).
func (l *FDLink) Wait(deadline time.Time) error { return l.conn.wait(deadline) }

// Poll reads a frame that has arrived without waiting, with the kernel's
// receive time (Poller).
func (l *FDLink) Poll(buf []byte) (int, int64, error) { return l.conn.poll(buf) }

// SetWaitKeepsP makes Wait, and Recv once it blocks, keep the Go
// scheduler's P (link.WaitKeeper).
func (l *FDLink) SetWaitKeepsP(on bool) { l.conn.keepP = on }

// SetRecvSpin makes Recv read without waiting for up to d before it
// blocks (RecvSpinner); 0 switches it off.
func (l *FDLink) SetRecvSpin(d time.Duration) { l.conn.spin = max(d, 0) }

// Close closes the link's descriptor. A Recv blocked in another goroutine
// returns an error matching ErrClosed. Later calls return nil.
func (l *FDLink) Close() error { return l.conn.close() }

// HardwareAddr returns a copy of the link's fixed, locally administered
// address.
func (l *FDLink) HardwareAddr() net.HardwareAddr { return l.addr.clone() }

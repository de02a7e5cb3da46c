//go:build linux

package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	ebpflink "github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/internal/realtime/monotime"
	"github.com/ecagent/ecagent/master/link"
)

// Compile-time checks: a Socket is a link the cycle can pipeline on.
var (
	_ link.Link        = (*Socket)(nil)
	_ link.Poller      = (*Socket)(nil)
	_ link.Waiter      = (*Socket)(nil)
	_ link.StatsReader = (*Socket)(nil)
)

// Geometry of the UMEM and the rings: umemFrames chunks of frameSize
// bytes, the first half lent to the kernel for receiving (the fill ring),
// the second half for sending. 128 KiB in all, registered (pinned) once:
// a cycle has a few frames in flight (its cyclic frames and a maintenance
// datagram or two), so 32 receive buffers ride out any burst the segment
// answers with, and every KiB here is locked in the cycle process.
const (
	frameSize  = 2048
	umemFrames = 64
	ringSize   = 32 // every ring; a power of two
	rxFrames   = umemFrames / 2
	stampSize  = 8 // the XDP program's arrival time in front of each frame
)

// Socket is an AF_XDP socket on queue 0 of an interface, fed by an XDP
// program that redirects EtherType 0x88A4 to it and passes every other
// frame to the kernel's stack. Frames live in a UMEM shared with the
// kernel: an answer is read from it where the kernel (or, zero-copy, the
// NIC) put it, and its chunk goes back to the fill ring, all without a
// system call; a frame is copied into a transmit chunk and the kernel
// kicked when the ring asks for it (always in copy mode, only when the
// driver has gone idle in zero-copy mode).
//
// The receive time Poll reports is the XDP program's clock reading when
// the frame came in, on the kernel's receive path before any socket
// code. Socket is safe for one sender and one receiver at a time, as
// every link.
type Socket struct {
	ifname string
	addr   net.HardwareAddr
	fd     int
	wake   int // eventfd Close signals
	mode   string
	zc     bool
	queues int

	mu     sync.RWMutex
	closed atomic.Bool

	umem               []byte
	fill, comp, rx, tx ring
	free               [umemFrames - rxFrames]uint64 // transmit chunks not in flight
	nfree              int
	received           atomic.Uint64

	pollFDs [2]unix.PollFd
	timeout unix.Timespec
	spin    time.Duration
	keepP   bool

	objs    xdpProgram
	xdpLink ebpflink.Link

	errTimeout, errClosed, errSendClosed, errAgain, errShort, errDown error
}

// ring is one of the four rings shared with the kernel: its producer and
// consumer indices, its flags word and its descriptors. Ours is the one
// index this side moves; the other is read with acquire semantics.
type ring struct {
	mem        []byte
	prod, cons *uint32
	flags      *uint32
	desc       unsafe.Pointer
}

// Open opens an AF_XDP link on queue 0 of ifname: it loads the XDP
// program, attaches it (native mode where the driver has it, generic
// otherwise), registers the UMEM, binds the socket (zero-copy where the
// driver offers it, copy mode otherwise) and enters it in the program's
// socket map. It needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_BPF (or
// CAP_SYS_ADMIN); without them the error matches os.ErrPermission. An
// interface with more than one receive queue is refused (frames on the
// other queues would miss the socket): make it one with
// `ethtool -L IFNAME combined 1`.
func Open(ifname string) (*Socket, error) {
	s, err := open(ifname, attachModes())
	if err != nil {
		return nil, &link.OpError{Op: "open", Link: ifname, Err: err}
	}
	return s, nil
}

// attachMode is a way to run the XDP program: in the driver (native) or
// on the kernel's socket buffers (generic, any driver).
type attachMode struct {
	flags ebpflink.XDPAttachFlags
	name  string
}

// attachModes lists the modes Open tries, fastest first.
func attachModes() []attachMode {
	return []attachMode{{ebpflink.XDPDriverMode, "native"}, {ebpflink.XDPGenericMode, "generic"}}
}

// openGeneric is Open with the program in generic mode (tests: veth has
// native XDP).
func openGeneric(ifname string) (*Socket, error) {
	s, err := open(ifname, attachModes()[1:])
	if err != nil {
		return nil, &link.OpError{Op: "open", Link: ifname, Err: err}
	}
	return s, nil
}

func open(ifname string, modes []attachMode) (_ *Socket, err error) {
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, err
	}
	if len(ifi.HardwareAddr) != 6 {
		return nil, fmt.Errorf("not an Ethernet interface (hardware address %q)", ifi.HardwareAddr)
	}
	queues := RxQueues(ifname)
	if queues > 1 {
		return nil, fmt.Errorf("%w: %d receive queues, the AF_XDP link serves one: ethtool -L %s combined 1", errors.ErrUnsupported, queues, ifname)
	}
	s := &Socket{ifname: ifname, addr: ifi.HardwareAddr, fd: -1, wake: -1, queues: queues}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	if err := s.objs.load(); err != nil {
		return nil, fmt.Errorf("loading the XDP program: %w", permission(err))
	}
	if s.fd, err = unix.Socket(unix.AF_XDP, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("AF_XDP socket: %w", err)
	}
	if s.wake, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := s.setupUMEM(); err != nil {
		return nil, err
	}
	// Attach before bind: a zero-copy bind needs the driver in XDP mode.
	for _, m := range modes {
		l, aerr := ebpflink.AttachXDP(ebpflink.XDPOptions{Program: s.objs.prog, Interface: ifi.Index, Flags: m.flags})
		if aerr == nil {
			s.xdpLink, s.mode = l, m.name
			break
		}
		err = aerr
	}
	if s.xdpLink == nil {
		return nil, fmt.Errorf("attaching the XDP program: %w", permission(err))
	}
	sa := &unix.SockaddrXDP{Flags: unix.XDP_ZEROCOPY | unix.XDP_USE_NEED_WAKEUP, Ifindex: uint32(ifi.Index)}
	if err := unix.Bind(s.fd, sa); err == nil {
		s.zc = true
	} else {
		sa.Flags = unix.XDP_COPY | unix.XDP_USE_NEED_WAKEUP
		if err := unix.Bind(s.fd, sa); err != nil {
			return nil, fmt.Errorf("bind to queue 0: %w", err)
		}
	}
	if err := s.objs.xsks.Put(uint32(0), uint32(s.fd)); err != nil {
		return nil, fmt.Errorf("entering the socket in the XDP program's map: %w", err)
	}
	s.pollFDs = [2]unix.PollFd{{Fd: int32(s.fd), Events: unix.POLLIN}, {Fd: int32(s.wake), Events: unix.POLLIN}}
	s.errTimeout = &link.OpError{Op: "recv", Link: ifname, Err: link.ErrTimeout}
	s.errClosed = &link.OpError{Op: "recv", Link: ifname, Err: link.ErrClosed}
	s.errSendClosed = &link.OpError{Op: "send", Link: ifname, Err: link.ErrClosed}
	s.errAgain = &link.OpError{Op: "send", Link: ifname, Err: unix.EAGAIN}
	s.errShort = &link.OpError{Op: "recv", Link: ifname, Err: io.ErrShortBuffer}
	s.errDown = &link.OpError{Op: "send", Link: ifname, Err: unix.ENETDOWN}
	return s, nil
}

// permission makes a refusal for want of a capability match
// os.ErrPermission.
func permission(err error) error {
	if errors.Is(err, unix.EPERM) && !errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("%w: %w", os.ErrPermission, err)
	}
	return err
}

// setupUMEM maps and registers the UMEM, sizes and maps the four rings,
// lends the receive half of the chunks to the kernel and keeps the other
// half for sending.
func (s *Socket) setupUMEM() error {
	var err error
	s.umem, err = unix.Mmap(-1, 0, umemFrames*frameSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap of the UMEM: %w", err)
	}
	reg := unix.XDPUmemReg{Addr: uint64(uintptr(unsafe.Pointer(&s.umem[0]))), Len: uint64(len(s.umem)), Size: frameSize}
	if err := setsockopt(s.fd, unix.XDP_UMEM_REG, unsafe.Pointer(&reg), unsafe.Sizeof(reg)); err != nil {
		return fmt.Errorf("registering the UMEM: %w", err)
	}
	for _, opt := range []int{unix.XDP_UMEM_FILL_RING, unix.XDP_UMEM_COMPLETION_RING, unix.XDP_RX_RING, unix.XDP_TX_RING} {
		n := uint32(ringSize)
		if err := setsockopt(s.fd, opt, unsafe.Pointer(&n), 4); err != nil {
			return fmt.Errorf("sizing ring %d: %w", opt, err)
		}
	}
	var off unix.XDPMmapOffsets
	size := uint32(unsafe.Sizeof(off))
	if _, _, errno := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_MMAP_OFFSETS,
		uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)), 0); errno != 0 {
		return fmt.Errorf("getsockopt XDP_MMAP_OFFSETS: %w", errno)
	}
	const descSize, addrSize = int(unsafe.Sizeof(unix.XDPDesc{})), 8
	for _, r := range []struct {
		r     *ring
		off   unix.XDPRingOffset
		pgoff int64
		elem  int
	}{
		{&s.fill, off.Fr, unix.XDP_UMEM_PGOFF_FILL_RING, addrSize},
		{&s.comp, off.Cr, unix.XDP_UMEM_PGOFF_COMPLETION_RING, addrSize},
		{&s.rx, off.Rx, unix.XDP_PGOFF_RX_RING, descSize},
		{&s.tx, off.Tx, unix.XDP_PGOFF_TX_RING, descSize},
	} {
		mem, err := unix.Mmap(s.fd, r.pgoff, int(r.off.Desc)+ringSize*r.elem, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			return fmt.Errorf("mmap of ring at %#x: %w", r.pgoff, err)
		}
		*r.r = ring{mem: mem, prod: (*uint32)(unsafe.Pointer(&mem[r.off.Producer])), cons: (*uint32)(unsafe.Pointer(&mem[r.off.Consumer])),
			flags: (*uint32)(unsafe.Pointer(&mem[r.off.Flags])), desc: unsafe.Pointer(&mem[r.off.Desc])}
	}
	for i := range rxFrames {
		*s.fillAddr(uint32(i)) = uint64(i * frameSize)
	}
	atomic.StoreUint32(s.fill.prod, rxFrames)
	for i := range s.free {
		s.free[i] = uint64((rxFrames + i) * frameSize)
	}
	s.nfree = len(s.free)
	return nil
}

func setsockopt(fd, opt int, p unsafe.Pointer, size uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_XDP, uintptr(opt), uintptr(p), size, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func (s *Socket) fillAddr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(s.fill.desc, uintptr(i%ringSize)*8))
}

func (s *Socket) compAddr(i uint32) *uint64 {
	return (*uint64)(unsafe.Add(s.comp.desc, uintptr(i%ringSize)*8))
}

func (r *ring) xdpDesc(i uint32) *unix.XDPDesc {
	return (*unix.XDPDesc)(unsafe.Add(r.desc, uintptr(i%ringSize)*unsafe.Sizeof(unix.XDPDesc{})))
}

// Send copies frame, zero-padded to link.MinFrameSize, into a free
// transmit chunk, puts it on the transmit ring and kicks the kernel when
// the ring asks for it. With no chunk free (all still in flight) it
// returns an error matching unix.EAGAIN: the frame is lost. It allocates
// nothing.
func (s *Socket) Send(frame []byte) error {
	if len(frame) < link.HeaderSize || len(frame) > frameSize {
		return &link.OpError{Op: "send", Link: s.ifname, Err: fmt.Errorf("%w: %d bytes", link.ErrFrameSize, len(frame))}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return s.errSendClosed
	}
	s.reclaim()
	prod := *s.tx.prod // ours
	if s.nfree == 0 || prod-atomic.LoadUint32(s.tx.cons) >= ringSize {
		return s.errAgain
	}
	s.nfree--
	addr := s.free[s.nfree]
	chunk := s.umem[addr : addr+frameSize]
	n := copy(chunk, frame)
	if n < link.MinFrameSize {
		clear(chunk[n:link.MinFrameSize])
		n = link.MinFrameSize
	}
	*s.tx.xdpDesc(prod) = unix.XDPDesc{Addr: addr, Len: uint32(n)}
	atomic.StoreUint32(s.tx.prod, prod+1)
	if atomic.LoadUint32(s.tx.flags)&unix.XDP_RING_NEED_WAKEUP == 0 {
		return nil
	}
	return s.kick(prod, addr)
}

// kick has the kernel send what the transmit ring holds. In copy mode the
// kernel reads the ring only within this call, so a frame it refused
// (ENETDOWN while the interface is down) is taken back rather than sent
// late by the next kick; a zero-copy driver reads the ring on its own,
// so there the frame stays.
func (s *Socket) kick(prod uint32, addr uint64) error {
	for {
		_, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0, unix.EAGAIN, unix.EBUSY, unix.ENOBUFS:
			// Taken, or the kernel will take it at the next kick: sent,
			// possibly late (an answer then counts as late).
			return nil
		case unix.EINTR:
			continue
		}
		if !s.zc && atomic.LoadUint32(s.tx.cons) == prod {
			atomic.StoreUint32(s.tx.prod, prod)
			s.free[s.nfree] = addr
			s.nfree++
		}
		if errno == unix.ENETDOWN {
			return s.errDown // every period while the interface is down: no allocation
		}
		return &link.OpError{Op: "send", Link: s.ifname, Err: errno}
	}
}

// reclaim takes the transmit chunks the kernel has finished with back
// from the completion ring.
func (s *Socket) reclaim() {
	cons := *s.comp.cons // ours
	prod := atomic.LoadUint32(s.comp.prod)
	for ; cons != prod; cons++ {
		s.free[s.nfree] = *s.compAddr(cons) &^ (frameSize - 1)
		s.nfree++
	}
	atomic.StoreUint32(s.comp.cons, cons)
}

// take copies the next received frame, if any, into buf, returns its
// chunk to the fill ring and reports its length and arrival time
// (CLOCK_REALTIME ns, 0 when the program could not write it).
func (s *Socket) take(buf []byte) (int, int64) {
	cons := *s.rx.cons // ours
	if atomic.LoadUint32(s.rx.prod) == cons {
		return 0, 0
	}
	d := *s.rx.xdpDesc(cons)
	var n int
	var at int64
	if d.Len >= stampSize && d.Addr+uint64(d.Len) <= uint64(len(s.umem)) {
		n = copy(buf, s.umem[d.Addr+stampSize:d.Addr+uint64(d.Len)])
		mono := int64(binary.NativeEndian.Uint64(s.umem[d.Addr : d.Addr+stampSize]))
		if now := monotime.Now(); mono > now-int64(10*time.Second) && mono <= now {
			at = time.Now().UnixNano() - (now - mono)
		}
	}
	fp := *s.fill.prod // ours
	*s.fillAddr(fp) = d.Addr &^ (frameSize - 1)
	atomic.StoreUint32(s.fill.prod, fp+1)
	atomic.StoreUint32(s.rx.cons, cons+1)
	s.received.Add(1)
	if atomic.LoadUint32(s.fill.flags)&unix.XDP_RING_NEED_WAKEUP != 0 {
		// A zero-copy driver gone idle: wake it to take the chunk.
		_, _, _ = unix.RawSyscall6(unix.SYS_RECVFROM, uintptr(s.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
	}
	return n, at
}

// Poll takes a frame that has arrived, with its arrival time
// (link.Poller). It allocates nothing and makes no system call.
func (s *Socket) Poll(buf []byte) (int, int64, error) {
	if len(buf) == 0 {
		return 0, 0, s.errShort
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return 0, 0, s.errClosed
	}
	n, at := s.take(buf)
	return n, at, nil
}

// Recv takes the next frame, waiting until deadline (forever for the zero
// time), first by reading the ring for the spin set with SetRecvSpin,
// then in ppoll. It allocates nothing.
func (s *Socket) Recv(buf []byte, deadline time.Time) (int, error) {
	if len(buf) == 0 {
		return 0, s.errShort
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return 0, s.errClosed
	}
	if n, _ := s.take(buf); n > 0 {
		return n, nil
	}
	if s.spin > 0 {
		end := time.Now().Add(s.spin)
		if !deadline.IsZero() && deadline.Before(end) {
			end = deadline
		}
		for time.Now().Before(end) {
			if s.closed.Load() {
				return 0, s.errClosed
			}
			if n, _ := s.take(buf); n > 0 {
				return n, nil
			}
		}
	}
	for {
		if err := s.waitLocked(deadline); err != nil {
			return 0, err
		}
		if n, _ := s.take(buf); n > 0 {
			return n, nil
		}
	}
}

// Wait waits until a frame can be taken (link.Waiter).
func (s *Socket) Wait(deadline time.Time) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.waitLocked(deadline)
}

func (s *Socket) waitLocked(deadline time.Time) error {
	for {
		if s.closed.Load() {
			return s.errClosed
		}
		if atomic.LoadUint32(s.rx.prod) != *s.rx.cons {
			return nil
		}
		var ts *unix.Timespec
		if !deadline.IsZero() {
			s.timeout = unix.NsecToTimespec(int64(max(time.Until(deadline), 0)))
			ts = &s.timeout
		}
		s.pollFDs[0].Revents, s.pollFDs[1].Revents = 0, 0
		var n int
		var errno unix.Errno
		if s.keepP {
			r, _, e := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&s.pollFDs[0])), 2, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
			n, errno = int(r), e
		} else {
			r, _, e := unix.Syscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&s.pollFDs[0])), 2, uintptr(unsafe.Pointer(ts)), 0, 0, 0)
			n, errno = int(r), e
		}
		switch {
		case errno == unix.EINTR:
			continue
		case errno != 0:
			return &link.OpError{Op: "recv", Link: s.ifname, Err: fmt.Errorf("ppoll: %w", errno)}
		case s.pollFDs[1].Revents != 0:
			return s.errClosed
		case n == 0:
			return s.errTimeout
		}
		if s.pollFDs[0].Revents&unix.POLLIN != 0 {
			return nil
		}
	}
}

// SetRecvSpin makes Recv read the ring without waiting for up to d before
// it blocks (link.RecvSpinner).
func (s *Socket) SetRecvSpin(d time.Duration) { s.spin = max(d, 0) }

// SetWaitKeepsP makes the waits raw system calls (link.WaitKeeper).
func (s *Socket) SetWaitKeepsP(on bool) { s.keepP = on }

// Stats counts the frames the socket took and those the kernel dropped
// for want of room (XDP_STATISTICS: receive ring full, fill ring empty,
// dropped). It allocates nothing.
func (s *Socket) Stats() (link.Stats, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed.Load() {
		return link.Stats{}, &link.OpError{Op: "stats", Link: s.ifname, Err: link.ErrClosed}
	}
	var st unix.XDPStatistics
	size := uint32(unsafe.Sizeof(st))
	if _, _, errno := unix.RawSyscall6(unix.SYS_GETSOCKOPT, uintptr(s.fd), unix.SOL_XDP, unix.XDP_STATISTICS,
		uintptr(unsafe.Pointer(&st)), uintptr(unsafe.Pointer(&size)), 0); errno != 0 {
		return link.Stats{}, &link.OpError{Op: "stats", Link: s.ifname, Err: errno}
	}
	drops := st.Rx_dropped + st.Rx_ring_full
	return link.Stats{Packets: s.received.Load() + drops, Drops: drops}, nil
}

// Close detaches the XDP program (frames go to the stack again), closes
// the socket and unmaps its memory once no call runs. A Recv blocked in
// another goroutine returns an error matching link.ErrClosed.
func (s *Socket) Close() error {
	if !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(s.wake, one[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.release()
}

// release frees what open made, in reverse.
func (s *Socket) release() error {
	var errs []error
	if s.xdpLink != nil {
		errs = append(errs, s.xdpLink.Close())
	}
	errs = append(errs, s.objs.Close())
	for _, r := range []*ring{&s.fill, &s.comp, &s.rx, &s.tx} {
		if r.mem != nil {
			errs = append(errs, unix.Munmap(r.mem))
			r.mem = nil
		}
	}
	if s.fd >= 0 {
		errs = append(errs, unix.Close(s.fd))
	}
	if s.umem != nil {
		errs = append(errs, unix.Munmap(s.umem))
		s.umem = nil
	}
	if s.wake >= 0 {
		errs = append(errs, unix.Close(s.wake))
	}
	if err := errors.Join(errs...); err != nil {
		return &link.OpError{Op: "close", Link: s.ifname, Err: err}
	}
	return nil
}

// HardwareAddr returns a copy of the interface's MAC address.
func (s *Socket) HardwareAddr() net.HardwareAddr { return append(net.HardwareAddr(nil), s.addr...) }

// Interface returns the interface's name.
func (s *Socket) Interface() string { return s.ifname }

// Mode says how the XDP program runs: "native" (in the driver) or
// "generic" (on the kernel's socket buffers, any driver).
func (s *Socket) Mode() string { return s.mode }

// ZeroCopy reports whether the NIC writes frames straight into the UMEM
// (XDP_ZEROCOPY); false is copy mode.
func (s *Socket) ZeroCopy() bool { return s.zc }

// RxQueues returns the number of receive queues of ifname as sysfs lists
// them, 0 when it cannot tell.
func RxQueues(ifname string) int {
	entries, err := os.ReadDir("/sys/class/net/" + ifname + "/queues")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "rx-") {
			n++
		}
	}
	return n
}

//go:build linux

package link

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Compile-time check that MmapSocket is a Link.
var _ Link = (*MmapSocket)(nil)

// Geometry of the rings (TPACKET_V2): a slot of ringFrameSize bytes holds
// one frame and its header, two slots to a page-sized block. The receive
// ring holds ringRxFrames frames, the transmit ring ringTxFrames: a cycle
// sends a few frames and collects their answers each period, so both
// rings are deep enough for many periods of backlog and still fit in
// 192 KiB, locked with the rest of the process.
const (
	ringBlockSize = 4096
	ringFrameSize = 2048
	ringRxFrames  = 64
	ringTxFrames  = 32
	// ringTxData is where a transmit slot's frame starts: the kernel reads
	// it right after the aligned tpacket2_hdr (TPACKET2_HDRLEN minus the
	// sockaddr_ll, PACKET_TX_HAS_OFF unset).
	ringTxData = (unix.SizeofTpacket2Hdr + 15) &^ 15
)

// MmapSocket is a RawSocket whose frames go through memory shared with
// the kernel (PACKET_MMAP, TPACKET_V2): a transmit ring the kernel sends
// from when kicked, and a receive ring it writes the arriving frames into
// with their receive time. Sending a frame is a copy into the next free
// slot and one system call (the kick, sendto without data); taking an
// answer that has arrived (Poll, and Recv when one waits) is a read of
// ring memory and no system call at all. A cycle is then its sleep and
// one kick a frame; the raw socket's sendto and recvmsg copy every frame
// through a fresh socket buffer instead.
//
// Everything else is as for a RawSocket: bound to EtherType 0x88A4,
// qdisc bypass, promiscuous for itself only, the kernel filter of
// Config.OwnFramesOnly, its own frames never received, the kernel's
// PACKET_STATISTICS. Recv reports an interface going down (ENETDOWN)
// once, as a RawSocket does. The rings are mapped once at Open and
// unmapped by Close, after every running call has left.
type MmapSocket struct {
	raw  RawSocket
	mem  []byte // the mapping: receive ring, then transmit ring
	rx   []byte // receive ring
	tx   []byte // transmit ring
	rxAt int    // next receive slot to look at (the receive side's)
	txAt int    // next transmit slot to fill (the send side's)

	sendRing  error // the transmit slot is still in the kernel's hands
	recvTrunc error // preset for an empty buffer
}

// OpenMmap opens a memory-mapped EtherCAT socket on the interface ifname.
// A nil cfg means DefaultConfig(); RecvBufferSize and SendBufferSize do
// not apply (the rings are the buffers). It needs CAP_NET_RAW; without it
// the error matches os.ErrPermission. A kernel without TPACKET_V2 rings
// (before 2.6.27) gives an error matching errors.ErrUnsupported.
func OpenMmap(ifname string, cfg *Config) (*MmapSocket, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	s := &MmapSocket{}
	c := *cfg
	c.RecvBufferSize, c.SendBufferSize = 0, 0
	if err := s.raw.open(ifname, &c, s.mapRings, unix.MSG_DONTWAIT, s.unmap); err != nil {
		return nil, err
	}
	s.sendRing = &OpError{Op: "send", Link: ifname, Err: unix.EAGAIN}
	s.recvTrunc = &OpError{Op: "recv", Link: ifname, Err: io.ErrShortBuffer}
	return s, nil
}

// mapRings asks for TPACKET_V2 receive and transmit rings and maps them
// (before the socket is bound).
func (s *MmapSocket) mapRings(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_VERSION, unix.TPACKET_V2); err != nil {
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOPROTOOPT) {
			err = fmt.Errorf("%w: %w", errors.ErrUnsupported, err)
		}
		return fmt.Errorf("setsockopt PACKET_VERSION TPACKET_V2: %w", err)
	}
	perBlock := ringBlockSize / ringFrameSize
	rx := unix.TpacketReq{Block_size: ringBlockSize, Block_nr: ringRxFrames / uint32(perBlock), Frame_size: ringFrameSize, Frame_nr: ringRxFrames}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_RX_RING, &rx); err != nil {
		return fmt.Errorf("setsockopt PACKET_RX_RING: %w", err)
	}
	tx := unix.TpacketReq{Block_size: ringBlockSize, Block_nr: ringTxFrames / uint32(perBlock), Frame_size: ringFrameSize, Frame_nr: ringTxFrames}
	if err := unix.SetsockoptTpacketReq(fd, unix.SOL_PACKET, unix.PACKET_TX_RING, &tx); err != nil {
		return fmt.Errorf("setsockopt PACKET_TX_RING: %w", err)
	}
	rxSize, txSize := ringRxFrames*ringFrameSize, ringTxFrames*ringFrameSize
	mem, err := unix.Mmap(fd, 0, rxSize+txSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("mmap of the rings (%d bytes): %w", rxSize+txSize, err)
	}
	s.mem, s.rx, s.tx = mem, mem[:rxSize:rxSize], mem[rxSize:]
	return nil
}

// unmap releases the rings' mapping, once.
func (s *MmapSocket) unmap() {
	if s.mem != nil {
		_ = unix.Munmap(s.mem)
		s.mem, s.rx, s.tx = nil, nil, nil
	}
}

// status returns the word a ring slot's owner is told by: tp_status of
// the tpacket2_hdr at the slot's start. Loading and storing it atomically
// orders the slot's other bytes against it, as the kernel's barriers do
// on its side.
func status(slot []byte) *uint32 { return (*uint32)(unsafe.Pointer(&slot[0])) }

// Send copies frame, zero-padded to MinFrameSize, into the next transmit
// slot and kicks the kernel (one sendto without data, which does not
// wait). When that slot is still being sent (the driver has not released
// it), it returns an error matching unix.EAGAIN: the frame is lost, as on
// a full socket queue. A kick that fails (ENETDOWN while the interface is
// down, ENOBUFS from a full driver queue) takes the frame back, so that
// it is never sent late by a later kick. It allocates nothing.
func (s *MmapSocket) Send(frame []byte) error {
	c := s.raw.conn
	if len(frame) < HeaderSize || len(frame) > ringFrameSize-ringTxData {
		return &OpError{Op: "send", Link: c.name, Err: fmt.Errorf("%w: %d bytes, want %d to %d",
			ErrFrameSize, len(frame), HeaderSize, ringFrameSize-ringTxData)}
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return c.errs.sendClosed
	}
	slot := s.tx[s.txAt*ringFrameSize : (s.txAt+1)*ringFrameSize]
	st := status(slot)
	if atomic.LoadUint32(st) != unix.TP_STATUS_AVAILABLE {
		return s.sendRing
	}
	n := copy(slot[ringTxData:], frame)
	if n < MinFrameSize {
		clear(slot[ringTxData+n : ringTxData+MinFrameSize])
		n = MinFrameSize
	}
	hdr := (*unix.Tpacket2Hdr)(unsafe.Pointer(&slot[0]))
	hdr.Len, hdr.Snaplen = uint32(n), uint32(n)
	atomic.StoreUint32(st, unix.TP_STATUS_SEND_REQUEST)
	return s.kick(st)
}

// kick has the kernel send the slot just marked, st, and moves on to the
// next slot. On failure the slot is taken back and filled again by the
// next Send: the kernel stops at the first slot it could not send and
// looks there again at the next kick, and it touches the ring only within
// this call (this is the socket's only sender), so a slot still marked is
// ours, and the frame is never sent late.
func (s *MmapSocket) kick(st *uint32) error {
	c := s.raw.conn
	for {
		_, _, errno := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(c.fd), 0, 0, unix.MSG_DONTWAIT, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno == 0 {
			s.txAt = (s.txAt + 1) % ringTxFrames
			return nil
		}
		atomic.StoreUint32(st, unix.TP_STATUS_AVAILABLE)
		switch errno {
		case unix.EAGAIN:
			return c.sendAgain
		case unix.ENOBUFS:
			return c.sendNoBuf
		}
		return c.errs.sendErr(c.name, errno)
	}
}

// take copies the frame in the next receive slot, if the kernel has
// filled it, into buf and hands the slot back. It returns the frame's
// length (0 for none) and its receive time (CLOCK_REALTIME ns). The
// caller holds conn.mu shared and has checked that the link is open.
func (s *MmapSocket) take(buf []byte) (int, int64) {
	slot := s.rx[s.rxAt*ringFrameSize : (s.rxAt+1)*ringFrameSize]
	st := status(slot)
	if atomic.LoadUint32(st)&unix.TP_STATUS_USER == 0 {
		return 0, 0
	}
	hdr := (*unix.Tpacket2Hdr)(unsafe.Pointer(&slot[0]))
	at := int64(hdr.Sec)*1e9 + int64(hdr.Nsec)
	start := int(hdr.Mac)
	end := min(start+int(hdr.Snaplen), len(slot))
	n := copy(buf, slot[start:end])
	atomic.StoreUint32(st, unix.TP_STATUS_KERNEL)
	s.rxAt = (s.rxAt + 1) % ringRxFrames
	return n, at
}

// Poll takes a frame that has arrived from the receive ring, with the
// kernel's receive time (Poller): no system call, no wait, no allocation.
func (s *MmapSocket) Poll(buf []byte) (int, int64, error) {
	c := s.raw.conn
	if len(buf) == 0 {
		return 0, 0, s.recvTrunc
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return 0, 0, c.errs.recvClosed
	}
	n, at := s.take(buf)
	return n, at, nil
}

// Recv takes the next frame from the receive ring, waiting (ppoll) until
// deadline when none has arrived; with SetRecvSpin it first reads the
// ring without waiting for that long, which costs no system call. When
// the interface goes down it returns an error matching unix.ENETDOWN
// once. It allocates nothing.
func (s *MmapSocket) Recv(buf []byte, deadline time.Time) (int, error) {
	c := s.raw.conn
	if len(buf) == 0 {
		return 0, s.recvTrunc
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed.Load() {
		return 0, c.errs.recvClosed
	}
	if n, _ := s.take(buf); n > 0 {
		return n, nil
	}
	if c.spin > 0 {
		end := time.Now().Add(c.spin)
		if !deadline.IsZero() && deadline.Before(end) {
			end = deadline
		}
		for time.Now().Before(end) {
			if c.closed.Load() {
				return 0, c.errs.recvClosed
			}
			if n, _ := s.take(buf); n > 0 {
				return n, nil
			}
		}
	}
	for {
		if err := c.waitLocked(deadline); err != nil {
			return 0, err
		}
		if n, _ := s.take(buf); n > 0 {
			return n, nil
		}
		if c.recvPoll[0].Revents&unix.POLLERR != 0 {
			// The interface went down (or another socket error): read and
			// clear it, as read(2) on a RawSocket would.
			if e, err := unix.GetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_ERROR); err == nil && e != 0 {
				return 0, c.errs.recvErr(c.name, unix.Errno(e))
			}
		}
	}
}

// Wait waits until a frame can be taken from the receive ring (Waiter).
func (s *MmapSocket) Wait(deadline time.Time) error { return s.raw.conn.wait(deadline) }

// SetWaitKeepsP makes Wait, and Recv once it blocks, keep the Go
// scheduler's P (WaitKeeper).
func (s *MmapSocket) SetWaitKeepsP(on bool) { s.raw.SetWaitKeepsP(on) }

// SetRecvSpin makes Recv read the ring without waiting for up to d before
// it blocks (RecvSpinner); 0 switches it off.
func (s *MmapSocket) SetRecvSpin(d time.Duration) { s.raw.SetRecvSpin(d) }

// Close closes the socket and, once no call runs any more, unmaps the
// rings. A Recv blocked in another goroutine returns an error matching
// ErrClosed. Later calls return nil.
func (s *MmapSocket) Close() error {
	c := s.raw.conn
	if c.closed.Load() {
		return nil
	}
	err := c.close() // waits for the running calls to leave
	c.mu.Lock()
	s.unmap()
	c.mu.Unlock()
	return err
}

// HardwareAddr returns a copy of the interface's MAC address.
func (s *MmapSocket) HardwareAddr() net.HardwareAddr { return s.raw.HardwareAddr() }

// Interface returns the name of the interface the socket is bound to.
func (s *MmapSocket) Interface() string { return s.raw.ifname }

// QdiscBypass reports whether frames bypass the traffic-control layer
// (see RawSocket.QdiscBypass).
func (s *MmapSocket) QdiscBypass() bool { return s.raw.qdiscBypass }

// OwnFramesOnly reports whether the kernel filter passes only the frames
// that come back from the segment (Config.OwnFramesOnly).
func (s *MmapSocket) OwnFramesOnly() bool { return s.raw.ownFramesOnly }

// Stats returns the kernel's receive counters summed since Open (see
// RawSocket.Stats): Drops counts frames lost to a full receive ring.
func (s *MmapSocket) Stats() (Stats, error) { return s.raw.Stats() }

//go:build linux

package link

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Compile-time check that RawSocket is a Link.
var _ Link = (*RawSocket)(nil)

// RawSocket is an AF_PACKET SOCK_RAW socket bound to one interface and to
// EtherType 0x88A4. It does not receive the frames it sends itself. With
// Config.OwnFramesOnly (the default) a kernel filter lets only the frames
// that come back from the segment through.
//
// With qdisc bypass (the default, see QdiscBypass) the kernel hands frames
// straight to the driver, and capture tools on the same interface (tcpdump,
// tshark) do not see them; they see the frames coming back. Capture on the
// far side, or open with Config.QdiscBypass false, to record both
// directions.
//
// One goroutine may Send while another Recvs; neither Send nor Recv may be
// called from two goroutines at once. Send never blocks: when the kernel's
// or the driver's queue is full it returns an error matching unix.EAGAIN or
// unix.ENOBUFS.
type RawSocket struct {
	conn           *fdConn
	ifname         string
	addr           hardwareAddr
	qdiscBypass    bool
	ignoreOutgoing bool
	ownFramesOnly  bool

	// The kernel's receive counters summed since Open: the kernel resets
	// them on each read (Stats).
	packets, drops atomic.Uint64
}

// Open opens a raw EtherCAT socket on the interface ifname. A nil cfg means
// DefaultConfig(). It needs CAP_NET_RAW; without it the error matches
// os.ErrPermission.
func Open(ifname string, cfg *Config) (*RawSocket, error) {
	if cfg == nil {
		cfg = DefaultConfig()
	}
	s := &RawSocket{}
	if err := s.open(ifname, cfg, nil, 0, nil); err != nil {
		return nil, err
	}
	return s, nil
}

// open opens s on the Ethernet interface ifname, the same way for a raw
// and a memory-mapped link: the packet socket, cfg's options and the bind
// (configure, with beforeBind), and the connection whose sends pass
// sendFlags. undo, when not nil, runs when it fails after the socket
// exists, before the socket is closed: it takes back what beforeBind may
// have set up. Its errors are *OpError of Op "open".
func (s *RawSocket) open(ifname string, cfg *Config, beforeBind func(fd int) error, sendFlags int, undo func()) error {
	openErr := func(err error) error { return &OpError{Op: "open", Link: ifname, Err: err} }

	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return openErr(err)
	}
	if len(ifi.HardwareAddr) != len(hardwareAddr{}) {
		return openErr(fmt.Errorf("not an Ethernet interface (hardware address %q)", ifi.HardwareAddr))
	}

	// Protocol 0 at creation: the socket receives nothing until bind
	// names the interface and the EtherType, so no foreign frame can slip
	// in between.
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return openErr(fmt.Errorf("socket: %w", err))
	}
	fail := func(err error) error {
		if undo != nil {
			undo()
		}
		unix.Close(fd)
		return openErr(err)
	}
	s.ifname, s.addr = ifname, hardwareAddr(ifi.HardwareAddr)
	if err := s.configure(fd, ifi.Index, cfg, beforeBind); err != nil {
		return fail(err)
	}
	to := &unix.SockaddrLinklayer{Protocol: htons(EtherTypeEtherCAT), Ifindex: ifi.Index, Halen: uint8(len(s.addr))}
	if s.conn, err = newFDConn(ifname, fd, to, sendFlags, false); err != nil {
		return fail(err)
	}
	return nil
}

// configure sets the socket options, binds and joins promiscuous mode.
// beforeBind, when not nil, runs just before the bind: a memory-mapped
// link sets up its rings there, which the kernel refuses on a bound,
// running socket.
func (s *RawSocket) configure(fd, ifindex int, cfg *Config, beforeBind func(fd int) error) error {
	// A socket bound to one EtherType never gets its own transmissions
	// back: the kernel copies outgoing frames only to ETH_P_ALL sockets,
	// and never to the sender. PACKET_IGNORE_OUTGOING (4.20+) makes that
	// hold even if the binding changes; older kernels lose nothing here.
	switch err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1); {
	case err == nil:
		s.ignoreOutgoing = true
	case errors.Is(err, unix.ENOPROTOOPT):
	default:
		return fmt.Errorf("setsockopt PACKET_IGNORE_OUTGOING: %w", err)
	}
	if cfg.QdiscBypass {
		switch err := unix.SetsockoptInt(fd, unix.SOL_PACKET, unix.PACKET_QDISC_BYPASS, 1); {
		case err == nil:
			s.qdiscBypass = true
		case errors.Is(err, unix.ENOPROTOOPT): // kernel older than 3.14: frames go through the qdisc
		default:
			return fmt.Errorf("setsockopt PACKET_QDISC_BYPASS: %w", err)
		}
	}
	if err := setBufferSize(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, cfg.RecvBufferSize); err != nil {
		return err
	}
	if err := setBufferSize(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, cfg.SendBufferSize); err != nil {
		return err
	}
	if cfg.OwnFramesOnly {
		if err := attachOwnFramesFilter(fd, s.addr); err != nil {
			return err
		}
		s.ownFramesOnly = true
	}
	if beforeBind != nil {
		if err := beforeBind(fd); err != nil {
			return err
		}
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(EtherTypeEtherCAT), Ifindex: ifindex}); err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	if cfg.Promiscuous {
		mreq := &unix.PacketMreq{Ifindex: int32(ifindex), Type: unix.PACKET_MR_PROMISC}
		if err := unix.SetsockoptPacketMreq(fd, unix.SOL_PACKET, unix.PACKET_ADD_MEMBERSHIP, mreq); err != nil {
			return fmt.Errorf("setsockopt PACKET_ADD_MEMBERSHIP promiscuous: %w", err)
		}
	}
	return nil
}

// setBufferSize sets a socket buffer size, first with the option that
// ignores the system limit (needs CAP_NET_ADMIN), then with the plain one.
func setBufferSize(fd, forceOpt, opt, size int) error {
	if size <= 0 {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, forceOpt, size); err == nil {
		return nil
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, size); err != nil {
		return fmt.Errorf("setsockopt buffer size %d: %w", size, err)
	}
	return nil
}

// htons converts a 16-bit value to network byte order as stored in a
// native-endian field.
func htons(v uint16) uint16 {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], v)
	return binary.NativeEndian.Uint16(b[:])
}

// Send transmits frame on the interface, zero-padded to MinFrameSize. It
// allocates nothing.
func (s *RawSocket) Send(frame []byte) error { return s.conn.send(frame) }

// Recv waits until deadline (forever for the zero time) for the next
// EtherCAT frame and copies it into buf, truncated to len(buf). It
// allocates nothing, on timeout either.
//
// When the interface goes down, Recv returns an error matching
// unix.ENETDOWN once; the socket receives again after the interface comes
// back up. If the interface is removed, close the socket and open a new one.
func (s *RawSocket) Recv(buf []byte, deadline time.Time) (int, error) {
	return s.conn.recv(buf, deadline)
}

// Wait waits until a frame can be read (Waiter).
func (s *RawSocket) Wait(deadline time.Time) error { return s.conn.wait(deadline) }

// Poll reads a frame that has arrived without waiting, with the kernel's
// receive time (Poller).
func (s *RawSocket) Poll(buf []byte) (int, int64, error) { return s.conn.poll(buf) }

// SetWaitKeepsP makes Wait, and Recv once it blocks, keep the Go
// scheduler's P (link.WaitKeeper).
func (s *RawSocket) SetWaitKeepsP(on bool) { s.conn.keepP = on }

// SetRecvSpin makes Recv read without waiting for up to d before it
// blocks (link.RecvSpinner); 0 switches it off.
func (s *RawSocket) SetRecvSpin(d time.Duration) { s.conn.spin = max(d, 0) }

// Close closes the socket, which also leaves promiscuous mode. A Recv
// blocked in another goroutine returns an error matching ErrClosed. Later
// calls return nil.
func (s *RawSocket) Close() error { return s.conn.close() }

// HardwareAddr returns a copy of the interface's MAC address.
func (s *RawSocket) HardwareAddr() net.HardwareAddr { return s.addr.clone() }

// Interface returns the name of the interface the socket is bound to.
func (s *RawSocket) Interface() string { return s.ifname }

// QdiscBypass reports whether frames bypass the kernel's traffic-control
// layer (PACKET_QDISC_BYPASS). It is false when Config.QdiscBypass was false
// or the kernel lacks the option.
func (s *RawSocket) QdiscBypass() bool { return s.qdiscBypass }

// IgnoresOutgoing reports whether the kernel accepted PACKET_IGNORE_OUTGOING
// (Linux 4.20+). Either way the socket does not receive the frames it sends:
// it is bound to EtherType 0x88A4, and the kernel copies outgoing frames
// only to sockets bound to all protocols (ETH_P_ALL), never back to their
// sender. The option guards against copies of frames sent by other sockets
// should the binding ever widen.
func (s *RawSocket) IgnoresOutgoing() bool { return s.ignoreOutgoing }

// OwnFramesOnly reports whether the socket's kernel filter passes only
// the frames that come back from the segment (Config.OwnFramesOnly).
func (s *RawSocket) OwnFramesOnly() bool { return s.ownFramesOnly }

// Stats returns the kernel's receive counters (PACKET_STATISTICS) summed
// since Open: Packets counts the frames the socket's filter passed, Drops
// those of them the kernel dropped because the receive queue was full.
// Frames the filter refused (Config.OwnFramesOnly) are in neither. It is
// one raw system call: it does not block, takes no lock other callers
// hold for long and allocates nothing, so the cycle may call it (at a low
// rate); several goroutines may call it at once. After Close it returns
// the last sums and an error matching ErrClosed.
func (s *RawSocket) Stats() (Stats, error) {
	var st unix.TpacketStats
	if err := s.conn.packetStats(&st); err != nil {
		return Stats{Packets: s.packets.Load(), Drops: s.drops.Load()}, err
	}
	// Packets first: a reader that adds between the two never sees more
	// drops than packets of its own delta.
	p := s.packets.Add(uint64(st.Packets))
	d := s.drops.Add(uint64(st.Drops))
	return Stats{Packets: p, Drops: d}, nil
}

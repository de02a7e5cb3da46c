package link

import (
	"errors"
	"net"
	"os"
	"time"
)

// Link sends and receives whole Ethernet frames.
type Link interface {
	// Send transmits one frame. Frames shorter than MinFrameSize bytes are
	// zero-padded to MinFrameSize without allocating.
	Send(frame []byte) error
	// Recv copies the next received frame into buf and returns its length.
	// It waits at most until deadline (the zero time waits forever); on
	// expiry it returns an error matching ErrTimeout (and
	// os.ErrDeadlineExceeded). A frame already queued is returned even when
	// the deadline has passed.
	Recv(buf []byte, deadline time.Time) (int, error)
	// Close releases the link. It is safe to call more than once; a Recv
	// blocked in another goroutine returns an error matching ErrClosed.
	Close() error
	// HardwareAddr returns the link's own MAC address.
	HardwareAddr() net.HardwareAddr
}

// RecvSpinner is a link whose Recv can spin before it blocks: it reads
// without waiting, again and again, for up to a set time, and only then
// sleeps in the kernel. An answer that comes back within the spin costs
// no context switch and no wake-up latency; the spin burns the CPU, which
// on an isolated core runs nothing else. SetRecvSpin(0) switches it off
// (the default). Call it while no Recv runs.
type RecvSpinner interface {
	SetRecvSpin(d time.Duration)
}

// WaitKeeper is a link whose blocking waits (Wait, and Recv once it
// blocks) can keep the Go scheduler's P: the wait is then a raw system
// call, for which the runtime does not enter its syscall state. An
// ordinary blocking wait lets sysmon take the P away after 20 µs and the
// waking thread must get one back; a process that waits for frame after
// frame that way keeps sysmon waking every 20 µs (a quarter of the
// simulator's CPU serving 128 slaves at 250 µs; docs/performance-log.md). It
// is for a process that serves one link from one goroutine with nothing
// else urgent to run: while the wait lasts, its P runs nothing else, and
// the runtime preempts the waiting goroutine (interrupting the wait) only
// after 10 ms. SetWaitKeepsP(false) restores the default. Call it while
// no Recv or Wait runs.
type WaitKeeper interface {
	SetWaitKeepsP(on bool)
}

// Waiter is a link that can wait for a frame without reading it. With
// Poller, a reader that must know when each frame arrived (the simulated
// segment, whose devices keep time by the wire) waits, then polls: a frame
// read after the reader was held up keeps the time it arrived.
type Waiter interface {
	// Wait returns nil once a frame can be read, an error matching
	// ErrTimeout at deadline (never, for the zero time), or one matching
	// ErrClosed. It allocates nothing.
	Wait(deadline time.Time) error
}

// Poller is a link that reads a frame that has already arrived without
// waiting for one, and tells when the kernel received it. A cycle that
// collects the answers to the frames it sent one period earlier (the
// pipelined exchange, as IgH's master and TwinCAT run) needs nothing
// else: no wait for its frames, so one context switch a cycle (its sleep)
// instead of two, and the frame round trip from the receive time.
type Poller interface {
	// Poll copies the oldest received frame into buf (truncated to
	// len(buf)) and returns its length and the time it was received, in
	// nanoseconds of CLOCK_REALTIME (time.Now().UnixNano()'s clock), or
	// 0 when the link cannot tell. It returns 0, 0, nil when no frame
	// waits. It never blocks and allocates nothing.
	Poll(buf []byte) (n int, received int64, err error)
}

// Frame sizes, in bytes, of an Ethernet frame without its frame check
// sequence.
const (
	// HeaderSize is the size of the Ethernet header: destination MAC,
	// source MAC and EtherType.
	HeaderSize = 14
	// MinFrameSize is the smallest frame on the wire; Send pads shorter
	// frames with zeros up to this size.
	MinFrameSize = 60
	// MaxFrameSize is the largest frame with a standard MTU of 1500 bytes
	// and one 802.1Q tag; a Recv buffer of this size never truncates.
	MaxFrameSize = 1518
)

// EtherTypeEtherCAT is the EtherType of EtherCAT frames (ETH_P_ECAT).
const EtherTypeEtherCAT = 0x88A4

// ErrTimeout is matched (errors.Is) by the error Recv returns when the
// deadline passes before a frame arrives. Such errors also match
// os.ErrDeadlineExceeded and have a Timeout method returning true.
var ErrTimeout error = timeoutError{}

// ErrClosed is matched (errors.Is) by the errors Send and Recv return once
// the link, or for a connected pair its peer, has been closed. Such errors
// also match net.ErrClosed.
var ErrClosed error = closedError{}

// ErrFrameSize is matched by the error Send returns for a frame shorter than
// HeaderSize or longer than the link can carry.
var ErrFrameSize = errors.New("frame length out of range")

type timeoutError struct{}

func (timeoutError) Error() string { return "receive timeout" }
func (timeoutError) Timeout() bool { return true }

// Is makes a timeout match os.ErrDeadlineExceeded as well.
func (timeoutError) Is(target error) bool { return target == os.ErrDeadlineExceeded }

type closedError struct{}

func (closedError) Error() string { return "link closed" }

// Is makes a closed link match net.ErrClosed as well.
func (closedError) Is(target error) bool { return target == net.ErrClosed }

// OpError is the error type returned by every link operation. It names the
// operation and the link, and wraps the cause, for example
// "link: recv on eth1: receive timeout". Timeout and closed errors are built
// once per link and shared, so that returning them allocates nothing: do
// not modify an OpError you receive.
type OpError struct {
	// Op is the operation: "open", "send", "recv", "close", "stats".
	Op string
	// Link names the link: the interface name for a RawSocket, a fixed
	// name for the in-process and socket-pair links.
	Link string
	// Err is the cause; it may be ErrTimeout, ErrClosed, ErrFrameSize or a
	// syscall.Errno.
	Err error
}

// Error implements error.
func (e *OpError) Error() string {
	return "link: " + e.Op + " on " + e.Link + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *OpError) Unwrap() error { return e.Err }

// Timeout reports whether the operation timed out.
func (e *OpError) Timeout() bool { return errors.Is(e.Err, ErrTimeout) }

// Stats counts what a link has received since it was opened.
type Stats struct {
	// Packets counts the frames that reached the link's receive queue,
	// including those dropped.
	Packets uint64
	// Drops counts the frames discarded because the receive queue was full.
	Drops uint64
}

// StatsReader is a link that tells what it has received (a RawSocket:
// the kernel's PACKET_STATISTICS). Stats allocates nothing and does not
// block.
type StatsReader interface {
	Stats() (Stats, error)
}

// presetErrors holds the errors a link returns on its hot path, built once
// so that timeouts and closed links do not allocate.
type presetErrors struct {
	recvTimeout error
	recvClosed  error
	sendClosed  error
	statsClosed error
}

func newPresetErrors(name string) presetErrors {
	return presetErrors{
		recvTimeout: &OpError{Op: "recv", Link: name, Err: ErrTimeout},
		recvClosed:  &OpError{Op: "recv", Link: name, Err: ErrClosed},
		sendClosed:  &OpError{Op: "send", Link: name, Err: ErrClosed},
		statsClosed: &OpError{Op: "stats", Link: name, Err: ErrClosed},
	}
}

// hardwareAddr is a MAC address stored by value.
type hardwareAddr [6]byte

// clone returns the address as a fresh net.HardwareAddr.
func (a hardwareAddr) clone() net.HardwareAddr {
	return net.HardwareAddr{a[0], a[1], a[2], a[3], a[4], a[5]}
}

// localAddr returns the fixed, locally administered unicast address of
// end number n (1 or 2) of an in-process link pair: 02:ec:a7:00:00:0n.
func localAddr(n byte) hardwareAddr {
	return hardwareAddr{0x02, 0xec, 0xa7, 0x00, 0x00, n}
}

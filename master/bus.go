package master

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// broadcastMAC is the destination of every frame the master sends: the
// segment takes frames whatever their address, and switches in between
// (there should be none) flood them.
var broadcastMAC = [6]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// Bus is the master's transport: it sends frames over a link and matches
// each answer to its request by the datagram index. An answer carrying
// another index (a late answer to an earlier, already abandoned frame) is
// discarded and counted as stale, never taken for the current one.
//
// Bus serves bring-up, diagnostics and recovery: one datagram per frame,
// with a timeout and retries. Its buffers are allocated once; a Bus that
// owns the link is not safe for concurrent use. While the cyclic exchange
// runs (Master.QueueAcyclic) the Bus does not touch the link at all: each
// datagram goes through the acyclic queue to the cycle thread, which
// sends it, and several goroutines may transact at once.
type Bus struct {
	link     link.Link
	src      [6]byte
	tx       []byte
	rx       []byte
	builder  wire.Builder
	index    uint8
	issued   uint64 // indexes handed out since New: index is its low byte
	timeout  time.Duration
	retries  int
	counters *counters
	// rtt is the round trip of the transactions on the master's own
	// link (bring-up), from which their tries' waits follow.
	rtt roundTrip

	// queue, when set, is where transactions go instead of the link: the
	// cycle thread owns the link (Master.QueueAcyclic).
	queue *acyclicQueue
}

func newBus(l link.Link, timeout time.Duration, retries int, c *counters) *Bus {
	b := &Bus{
		link:     l,
		tx:       make([]byte, wire.MaxFrameLen),
		rx:       make([]byte, link.MaxFrameSize),
		timeout:  timeout,
		retries:  retries,
		counters: c,
	}
	copy(b.src[:], l.HardwareAddr())
	return b
}

// nextIndex returns a fresh datagram index. Bring-up and cyclic frames
// draw from the same counter, so an index is reused only after 256 frames.
func (b *Bus) nextIndex() uint8 {
	b.index++
	b.issued++
	return b.index
}

// AnyWKC passed as the wanted working counter of a broadcast or logical
// helper skips the check.
const AnyWKC = -1

// Transact sends one datagram with len(data) bytes and waits for its answer,
// sending it again up to the configured number of retries when none comes
// back in time. For commands that write, data is sent; for commands that
// read, the answer's data is copied into data. It returns the working
// counter of the answer. An unanswered frame gives an error matching
// ErrNoResponse. While the cycle owns the link (Master.QueueAcyclic) each
// try is a datagram queued for the cycle (see transactQueued); a full queue
// gives an error matching ErrAcyclicQueueFull.
//
// On its own link (bring-up), every try of one transaction is the same
// frame with the same datagram index, so the answer to any of them is the
// answer: a loaded host that delays an answer past its try's wait (the
// segment, or the simulator serving it, starved of CPU) loses no try to
// it, and a write the slave took on an earlier try is not taken for one it
// refused (a mailbox write answered with working counter 0 by the full
// mailbox its first try filled). Each try waits twice as long as the one
// before it (back-off), from the larger of the configured timeout and the
// round trip measured on this link (roundTrip), so that a host whose
// answers slow down gets longer waits without a configuration change.
func (b *Bus) Transact(ctx context.Context, cmd wire.Command, address uint32, data []byte) (uint16, error) {
	if b.queue != nil {
		return b.transactQueued(ctx, cmd, address, data)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("master: %v %s: %w", cmd, formatAddress(cmd, address), err)
	}
	idx, err := b.build(cmd, address, data)
	if err != nil {
		return 0, fmt.Errorf("master: %v %s: %w", cmd, formatAddress(cmd, address), err)
	}
	start := time.Now()
	for try := 0; ; try++ {
		if err := b.link.Send(b.builder.Bytes()); err != nil {
			return 0, fmt.Errorf("master: %v %s: send: %w", cmd, formatAddress(cmd, address), err)
		}
		deadline := time.Now().Add(b.tryTimeout(try))
		if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
			deadline = dl
		}
		wkc, ok, err := b.await(idx, cmd, data, deadline)
		switch {
		case err != nil:
			return 0, fmt.Errorf("master: %v %s: receive: %w", cmd, formatAddress(cmd, address), err)
		case ok:
			// From the first try's sending: an answer to an earlier try
			// is no quicker than that, and a host that makes answers
			// come late raises the next transactions' waits.
			b.rtt.observe(time.Since(start))
			return wkc, nil
		}
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("master: %v %s: %w", cmd, formatAddress(cmd, address), err)
		}
		if try >= b.retries {
			return 0, fmt.Errorf("master: %v %s: %w after %d tries in %v (each waiting twice the one before, from %v)",
				cmd, formatAddress(cmd, address), ErrNoResponse, try+1, time.Since(start).Round(time.Millisecond), b.tryTimeout(0))
		}
		b.counters.retries.Add(1)
	}
}

// transactQueued is Transact while the cycle owns the link: each try is
// a datagram queued for the cycle. A try counts against the retries only
// when the cycle had the chance to carry it: it carried it and the frame
// was lost, or it ran carryCycles cycles without room for it. A host that
// delays the cycle delays the datagram with it, and that is no try lost
// (see acyclicQueue.transact); a cycle that runs too few cycles to carry
// it within the queue's backstop (Config.StateTimeout) fails it. After a
// lost frame the next try waits, twice as long after each, so that a
// burst of losses (a host stall longer than a cycle) is not met by every
// try at once; it gives up after Config.Retries and lossPatience.
func (b *Bus) transactQueued(ctx context.Context, cmd wire.Command, address uint32, data []byte) (uint16, error) {
	q := b.queue
	start := time.Now()
	var lost, notCarried int
	for try := 0; ; try++ {
		wkc, out, err := q.transact(ctx, cmd, address, data, true)
		switch {
		case err != nil:
			return 0, fmt.Errorf("master: %v %s: queue for the cycle: %w", cmd, formatAddress(cmd, address), err)
		case out == tryAnswered:
			return wkc, nil
		case out == tryStalled:
			return 0, fmt.Errorf("master: %v %s: %w: the cycle did not carry it within %v (it ran fewer than %d cycles: stopped or starved)",
				cmd, formatAddress(cmd, address), ErrNoResponse, time.Since(start).Round(time.Millisecond), carryCycles)
		case out == tryLost:
			lost++
		default:
			notCarried++
		}
		if try >= b.retries && (b.retries == 0 || time.Since(start) >= lossPatience) {
			return 0, fmt.Errorf("master: %v %s: %w after %d tries in %v (%d frames lost, %d times not carried in %d cycles)",
				cmd, formatAddress(cmd, address), ErrNoResponse, try+1, time.Since(start).Round(time.Millisecond), lost, notCarried, carryCycles)
		}
		b.counters.retries.Add(1)
		if out == tryLost {
			pause(ctx, min(q.wait<<min(lost-1, 16), maxTryTimeout))
		}
	}
}

// pause sleeps for d or until ctx ends, whichever is first, allocating
// nothing (no timer): it looks at ctx every 5 ms.
func pause(ctx context.Context, d time.Duration) {
	end := time.Now().Add(d)
	for ctx.Err() == nil {
		left := time.Until(end)
		if left <= 0 {
			return
		}
		time.Sleep(min(left, 5*time.Millisecond))
	}
}

// lossPatience is how long a transaction through the cycle goes on
// trying when its frames are lost (with at least Config.Retries retries):
// on a loaded host the cycle's answers come late for tens of
// milliseconds in a row, longer than a few tries at once span (the
// kernel's network processing starved, measured under stress-ng on two
// CPUs: four frames of a maintenance read lost in 45 ms), and such
// frames are the host's, not the bus's. A link that is down fails a
// transaction after it.
const lossPatience = time.Second

// maxTryTimeout caps the wait of one try of a transaction on the master's
// own link, however slow the measured round trip or how far the back-off
// went; a configured Timeout above it is its own cap.
const maxTryTimeout = 500 * time.Millisecond

// tryTimeout is how long try number try (0 first) of a transaction on the
// master's own link waits for an answer: the configured timeout or the
// measured round trip's (whichever is longer), doubled for each try
// before it, within maxTryTimeout.
func (b *Bus) tryTimeout(try int) time.Duration {
	limit := max(b.timeout, maxTryTimeout)
	t := min(b.rtt.timeout(b.timeout), limit)
	for range try {
		t = min(2*t, limit)
	}
	return t
}

// frameTimeout is how long one frame waits for its answer: the
// configured timeout, or the queue's wait while the cycle owns the link.
func (b *Bus) frameTimeout() time.Duration {
	if b.queue != nil {
		return b.queue.wait
	}
	return b.timeout
}

// build writes a frame of one datagram with a fresh index into the
// transmit buffer and returns the index.
func (b *Bus) build(cmd wire.Command, address uint32, data []byte) (uint8, error) {
	idx := b.nextIndex()
	if err := b.builder.Reset(b.tx, broadcastMAC, b.src); err != nil {
		return 0, fmt.Errorf("build frame: %w", err)
	}
	d, err := b.builder.Append(cmd, idx, address, len(data))
	if err != nil {
		return 0, fmt.Errorf("build frame with %d bytes: %w", len(data), err)
	}
	if cmd.Writes() {
		copy(d, data)
	}
	return idx, nil
}

// exchange builds one frame with a fresh index, sends it and awaits its
// answer (ok false when none came in time). While the cycle owns the link
// the datagram is queued for it instead.
func (b *Bus) exchange(ctx context.Context, cmd wire.Command, address uint32, data []byte) (wkc uint16, ok bool, err error) {
	if q := b.queue; q != nil {
		var out tryOutcome
		wkc, out, err = q.transact(ctx, cmd, address, data, false)
		if err != nil {
			return 0, false, fmt.Errorf("queue for the cycle: %w", err)
		}
		return wkc, out == tryAnswered, nil
	}
	idx, err := b.build(cmd, address, data)
	if err != nil {
		return 0, false, err
	}
	if err := b.link.Send(b.builder.Bytes()); err != nil {
		return 0, false, fmt.Errorf("send: %w", err)
	}
	deadline := time.Now().Add(b.frameTimeout())
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	wkc, ok, err = b.await(idx, cmd, data, deadline)
	if err != nil {
		return 0, false, fmt.Errorf("receive: %w", err)
	}
	return wkc, ok, nil
}

// await receives frames until the answer to datagram idx arrives or the
// deadline passes (ok false, no error). Other frames are counted and
// dropped.
func (b *Bus) await(idx uint8, cmd wire.Command, data []byte, deadline time.Time) (wkc uint16, ok bool, err error) {
	for {
		n, err := b.link.Recv(b.rx, deadline)
		if err != nil {
			if errors.Is(err, link.ErrTimeout) {
				return 0, false, nil
			}
			return 0, false, err
		}
		var fr wire.Frame
		var d wire.Datagram
		if fr.Decode(b.rx[:n]) != nil {
			b.counters.invalid.Add(1)
			continue
		}
		if it := fr.Datagrams(); !it.Next(&d) {
			b.counters.invalid.Add(1)
			continue
		}
		if d.Index != idx || d.Command != cmd || len(d.Data) != len(data) {
			b.counters.stale.Add(1)
			continue
		}
		switch answers(b.builder.Bytes(), &fr) {
		case answerForeign:
			b.counters.foreign.Add(1)
			continue
		case answerMismatch:
			b.counters.mismatch.Add(1)
			continue
		}
		if cmd.Reads() {
			copy(data, d.Data)
		}
		return d.WKC, true, nil
	}
}

// check turns a working counter into a *WKCError when it is not want
// (want AnyWKC accepts any).
func check(cmd wire.Command, address uint32, want int, got uint16) error {
	if want == AnyWKC || int(got) == want {
		return nil
	}
	return &WKCError{Command: cmd, Address: address, Want: uint16(want), Got: got}
}

// transactWant runs Transact and checks the working counter.
func (b *Bus) transactWant(ctx context.Context, cmd wire.Command, address uint32, data []byte, want int) (uint16, error) {
	wkc, err := b.Transact(ctx, cmd, address, data)
	if err != nil {
		return wkc, err
	}
	return wkc, check(cmd, address, want, wkc)
}

// BRD reads register ado of every slave, ORed together, into data and
// returns the working counter: the number of slaves that answered. want is
// the expected count, or AnyWKC.
func (b *Bus) BRD(ctx context.Context, ado uint16, data []byte, want int) (uint16, error) {
	return b.transactWant(ctx, wire.BRD, wire.PhysicalAddress(0, ado), data, want)
}

// BWR writes data to register ado of every slave; want is the expected
// number of slaves, or AnyWKC.
func (b *Bus) BWR(ctx context.Context, ado uint16, data []byte, want int) error {
	_, err := b.transactWant(ctx, wire.BWR, wire.PhysicalAddress(0, ado), data, want)
	return err
}

// APRD reads register ado of the slave at ring position pos into data.
func (b *Bus) APRD(ctx context.Context, pos int, ado uint16, data []byte) error {
	_, err := b.transactWant(ctx, wire.APRD, wire.PhysicalAddress(wire.PositionADP(pos), ado), data, 1)
	return err
}

// APWR writes data to register ado of the slave at ring position pos.
func (b *Bus) APWR(ctx context.Context, pos int, ado uint16, data []byte) error {
	_, err := b.transactWant(ctx, wire.APWR, wire.PhysicalAddress(wire.PositionADP(pos), ado), data, 1)
	return err
}

// Read is one register read of Bus.ReadAll.
type Read struct {
	Station  uint16 // station address of the slave
	Register uint16 // first register read
	Data     []byte // receives the answer; its length is the length read
	WKC      uint16 // working counter of the answer (1: the slave answered)
	OK       bool   // an answer came back: false when the frame was lost, the read was not sent in time or the queue was full

	slot *acyclicSlot // while queued for the cycle
}

// ReadAll reads each of reads once, as ReadOnce does, and fills in its
// WKC and OK. While the cycle carries the master's datagrams
// (Master.QueueAcyclic) the reads are queued together: the cycle packs
// them into as few frames as fit, and the caller wakes once for all of
// them, not once per read (a poller that read 128 slaves one after the
// other woke 128 times a round, each time at the cost of a scheduling
// round trip through the kernel on the core beside the cycle's). It then
// allocates nothing, failed reads included. At most a quarter of the
// queue (AcyclicQueueLen/4 reads) is taken at a time, leaving room for
// other transactions; larger batches go in turns. The error is ctx's, or
// a read longer than a datagram can carry.
func (b *Bus) ReadAll(ctx context.Context, reads []Read) error {
	q := b.queue
	if q == nil {
		for i := range reads {
			r := &reads[i]
			var err error
			r.WKC, r.OK, err = b.ReadOnce(ctx, r.Station, r.Register, r.Data)
			if err != nil {
				return err
			}
		}
		return nil
	}
	for len(reads) > 0 {
		n := min(len(reads), readAllBatch)
		if err := q.transactAll(ctx, reads[:n]); err != nil {
			return fmt.Errorf("queue for the cycle: %w", err)
		}
		reads = reads[n:]
	}
	return nil
}

// readAllBatch is how many reads ReadAll queues at a time.
const readAllBatch = AcyclicQueueLen / 4

// ReadOnce reads register ado of the slave with station address station
// with one FPRD and no retry: ok is false when the frame did not come
// back, wkc is the working counter (1: the slave answered) otherwise.
// While the cycle carries the master's datagrams (Master.QueueAcyclic) a
// failed read allocates nothing, unlike FPRD's errors: it is for pollers
// that run beside an allocation-free cycle.
func (b *Bus) ReadOnce(ctx context.Context, station, ado uint16, data []byte) (wkc uint16, ok bool, err error) {
	return b.exchange(ctx, wire.FPRD, wire.PhysicalAddress(station, ado), data)
}

// FPRD reads register ado of the slave with station address station into data.
func (b *Bus) FPRD(ctx context.Context, station, ado uint16, data []byte) error {
	_, err := b.transactWant(ctx, wire.FPRD, wire.PhysicalAddress(station, ado), data, 1)
	return err
}

// FPWR writes data to register ado of the slave with station address station.
func (b *Bus) FPWR(ctx context.Context, station, ado uint16, data []byte) error {
	_, err := b.transactWant(ctx, wire.FPWR, wire.PhysicalAddress(station, ado), data, 1)
	return err
}

// FPRW writes data to register ado of the slave with station address
// station and returns the previous content in data (working counter 3).
func (b *Bus) FPRW(ctx context.Context, station, ado uint16, data []byte) error {
	_, err := b.transactWant(ctx, wire.FPRW, wire.PhysicalAddress(station, ado), data, 3)
	return err
}

// LRW exchanges data with the logical address space at logical; want is
// the expected working counter, or AnyWKC. It is the acyclic form; the
// cyclic exchange uses its pre-built frames (see Cyclic).
func (b *Bus) LRW(ctx context.Context, logical uint32, data []byte, want int) (uint16, error) {
	return b.transactWant(ctx, wire.LRW, logical, data, want)
}

package link

import (
	"fmt"
	"net"
	"sync/atomic"
	"time"
)

// Compile-time check that PipeEnd is a Link.
var _ Link = (*PipeEnd)(nil)

// DefaultPipeQueueLen is the number of frame slots per direction of a pipe
// unless WithQueueLen says otherwise.
const DefaultPipeQueueLen = 64

// PipeOption configures NewPipe.
type PipeOption func(*pipeConfig)

type pipeConfig struct {
	queueLen     int
	maxFrameSize int
}

// WithQueueLen sets the number of frame slots per direction. It is rounded
// up to a power of two; values below 1 mean 1.
func WithQueueLen(n int) PipeOption {
	return func(c *pipeConfig) { c.queueLen = n }
}

// WithMaxFrameSize sets the size of each frame slot, the largest frame Send
// accepts. Values below MinFrameSize mean MinFrameSize. The default is
// MaxFrameSize.
func WithMaxFrameSize(n int) PipeOption {
	return func(c *pipeConfig) { c.maxFrameSize = n }
}

// NewPipe returns a connected, in-process pair of links. A frame sent on one
// end is received on the other, copied through fixed slots allocated here.
// End a has the address 02:ec:a7:00:00:01, end b 02:ec:a7:00:00:02.
func NewPipe(opts ...PipeOption) (a, b *PipeEnd) {
	cfg := pipeConfig{queueLen: DefaultPipeQueueLen, maxFrameSize: MaxFrameSize}
	for _, opt := range opts {
		opt(&cfg)
	}
	cfg.maxFrameSize = max(cfg.maxFrameSize, MinFrameSize)
	slots := 1
	for slots < cfg.queueLen {
		slots <<= 1
	}
	aToB := newPipeQueue(slots, cfg.maxFrameSize)
	bToA := newPipeQueue(slots, cfg.maxFrameSize)
	a = newPipeEnd("pipe-a", localAddr(1), bToA, aToB)
	b = newPipeEnd("pipe-b", localAddr(2), aToB, bToA)
	a.peer, b.peer = b, a
	return a, b
}

// PipeEnd is one end of an in-process link pair made by NewPipe.
//
// One goroutine may Send while another Recvs; neither Send nor Recv may be
// called from two goroutines at once. Send never blocks: when the peer's
// receive queue is full the frame is dropped and counted by the peer's
// Dropped. After one end is closed, the other end's Recv still returns the
// frames already queued, then an error matching ErrClosed; Send on either
// end returns an error matching ErrClosed.
type PipeEnd struct {
	name   string
	addr   hardwareAddr
	in     *pipeQueue
	out    *pipeQueue
	peer   *PipeEnd
	closed atomic.Bool
	done   chan struct{}
	timer  *time.Timer
	errs   presetErrors
}

func newPipeEnd(name string, addr hardwareAddr, in, out *pipeQueue) *PipeEnd {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	return &PipeEnd{
		name:  name,
		addr:  addr,
		in:    in,
		out:   out,
		done:  make(chan struct{}),
		timer: timer,
		errs:  newPresetErrors(name),
	}
}

// Send copies frame into the peer's receive queue, zero-padded to
// MinFrameSize. A full queue drops the frame silently (see Dropped), as an
// Ethernet wire would. Frames shorter than HeaderSize or longer than the
// pipe's maximum frame size are rejected with an error matching ErrFrameSize.
func (e *PipeEnd) Send(frame []byte) error {
	if len(frame) < HeaderSize || len(frame) > e.out.slotSize {
		return &OpError{Op: "send", Link: e.name, Err: fmt.Errorf("%w: %d bytes, want %d to %d",
			ErrFrameSize, len(frame), HeaderSize, e.out.slotSize)}
	}
	if e.closed.Load() || e.peer.closed.Load() {
		return e.errs.sendClosed
	}
	e.out.push(frame)
	return nil
}

// Recv copies the next frame sent by the peer into buf (truncating it to
// len(buf)) and returns its length. It waits until deadline, or forever
// for the zero time. Waiting reuses one timer per end and allocates nothing.
//
// A frame wakes Recv at once, but a timeout has the Go runtime timer's
// resolution: about 1 ms late on the hosts measured. Where timeouts must be
// precise, use NewSocketPair, whose ppoll-based wait is about 0.1 ms late
// (less for SCHED_FIFO threads, which have no timer slack).
func (e *PipeEnd) Recv(buf []byte, deadline time.Time) (int, error) {
	for {
		if err := e.Wait(deadline); err != nil {
			return 0, err
		}
		if n, ok := e.in.pop(buf); ok {
			return n, nil
		}
	}
}

// Wait waits until a frame sent by the peer can be read (Waiter), until
// deadline or forever for the zero time, with Recv's timer resolution.
func (e *PipeEnd) Wait(deadline time.Time) error {
	for {
		if e.closed.Load() {
			return e.errs.recvClosed
		}
		if e.in.head.Load() != e.in.tail.Load() {
			return nil
		}
		if e.peer.closed.Load() {
			// The peer's last Send happened before its Close: look once
			// more so that nothing it sent is lost.
			if e.in.head.Load() != e.in.tail.Load() {
				return nil
			}
			return e.errs.recvClosed
		}
		var expired <-chan time.Time
		if !deadline.IsZero() {
			wait := time.Until(deadline)
			if wait <= 0 {
				return e.errs.recvTimeout
			}
			e.timer.Reset(wait)
			expired = e.timer.C
		}
		select {
		case <-e.in.ready:
		case <-e.done:
		case <-e.peer.done:
		case <-expired:
			return e.errs.recvTimeout
		}
		if expired != nil {
			e.timer.Stop()
		}
	}
}

// Poll copies the oldest frame sent by the peer into buf without waiting
// (Poller), with the time the peer sent it as its receive time: the pipe
// delivers at once. It returns 0, 0, nil when none waits.
func (e *PipeEnd) Poll(buf []byte) (int, int64, error) {
	if e.closed.Load() {
		return 0, 0, e.errs.recvClosed
	}
	if n, at, ok := e.in.popStamped(buf); ok {
		return n, at, nil
	}
	if e.peer.closed.Load() {
		return 0, 0, e.errs.recvClosed
	}
	return 0, 0, nil
}

// Close closes this end. It never fails and may be called more than once.
func (e *PipeEnd) Close() error {
	if e.closed.CompareAndSwap(false, true) {
		close(e.done)
	}
	return nil
}

// HardwareAddr returns a copy of this end's fixed, locally administered
// address.
func (e *PipeEnd) HardwareAddr() net.HardwareAddr { return e.addr.clone() }

// Dropped returns how many frames the peer sent to this end that were
// discarded because this end's receive queue was full.
func (e *PipeEnd) Dropped() uint64 { return e.in.dropped.Load() }

// Stats returns the counters of this end's receive queue.
func (e *PipeEnd) Stats() Stats {
	return Stats{Packets: e.in.packets.Load(), Drops: e.in.dropped.Load()}
}

// pipeQueue is a bounded single-producer, single-consumer queue of frames
// held in fixed slots of one backing array.
type pipeQueue struct {
	slotSize int
	mask     uint64
	frames   []byte // len(lens) slots of slotSize bytes
	lens     []int
	stamps   []int64       // CLOCK_REALTIME ns of each slot's push
	ready    chan struct{} // holds a token after a push

	_    [64]byte      // keep the producer's and consumer's words on separate cache lines
	head atomic.Uint64 // next slot to read, written by the consumer
	_    [56]byte
	tail atomic.Uint64 // next slot to write, written by the producer

	packets atomic.Uint64
	dropped atomic.Uint64
}

func newPipeQueue(slots, slotSize int) *pipeQueue {
	return &pipeQueue{
		slotSize: slotSize,
		mask:     uint64(slots - 1),
		frames:   make([]byte, slots*slotSize),
		lens:     make([]int, slots),
		stamps:   make([]int64, slots),
		ready:    make(chan struct{}, 1),
	}
}

func (q *pipeQueue) slot(i uint64) []byte {
	start := int(i&q.mask) * q.slotSize
	return q.frames[start : start+q.slotSize]
}

// push copies frame into the next free slot, padded to MinFrameSize, or
// counts it as dropped when the queue is full.
func (q *pipeQueue) push(frame []byte) {
	q.packets.Add(1)
	tail := q.tail.Load()
	if tail-q.head.Load() > q.mask {
		q.dropped.Add(1)
		return
	}
	slot := q.slot(tail)
	n := copy(slot, frame)
	if n < MinFrameSize {
		clear(slot[n:MinFrameSize])
		n = MinFrameSize
	}
	q.lens[tail&q.mask] = n
	q.stamps[tail&q.mask] = time.Now().UnixNano()
	q.tail.Store(tail + 1)
	select {
	case q.ready <- struct{}{}:
	default: // a token is already waiting
	}
}

// pop copies the oldest frame into buf, truncated to len(buf).
func (q *pipeQueue) pop(buf []byte) (int, bool) {
	n, _, ok := q.popStamped(buf)
	return n, ok
}

// popStamped is pop that also returns the time the frame was pushed.
func (q *pipeQueue) popStamped(buf []byte) (int, int64, bool) {
	head := q.head.Load()
	if head == q.tail.Load() {
		return 0, 0, false
	}
	n := copy(buf, q.slot(head)[:q.lens[head&q.mask]])
	at := q.stamps[head&q.mask]
	q.head.Store(head + 1)
	return n, at, true
}

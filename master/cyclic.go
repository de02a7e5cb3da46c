package master

import (
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/wire"
)

// CycleResult tells what one Exchange achieved. It is returned by value and
// holds no pointer into the master except Err, which is one of the
// pre-allocated sentinels or an error value of the link.
type CycleResult struct {
	// Cycle numbers the Exchange calls from 1 (Stats.Cycles after this one).
	Cycle uint64
	// WKC is the sum of the working counters of the LRW datagrams that came
	// back; ExpectedWKC what they sum to when every slave took part.
	WKC         uint16
	ExpectedWKC uint16
	// Frames is how many frames the cycle sent; Lost how many of them did
	// not come back before the deadline.
	Frames int
	Lost   int
	// Stale counts answers discarded in this cycle because they belonged
	// to an earlier frame (typically the late answer of a lost one).
	Stale int
	// Responding is the number of slaves that answered the AL status read
	// riding in the first frame (BRD 0x0130), ALStates the OR of their
	// state nibbles (0x08: all in OP; 0x0C: some in SAFEOP, …) and
	// ALError whether one of them shows an error indication. All zero when
	// the first frame was lost.
	Responding uint16
	ALStates   uint8
	ALError    bool
	// SendTime is taken just before the first frame is sent, RecvTime when
	// the last answer has arrived (zero when a frame was lost), both from
	// Config.Clock in nanoseconds.
	SendTime int64
	RecvTime int64
	// Err is nil for a complete cycle with the expected working counter;
	// otherwise the link's error, ErrFrameLost or ErrWKCMismatch, in that
	// order of precedence. The AL status fields do not set it.
	Err error
}

// OK reports whether every frame came back with the expected working counter.
func (r CycleResult) OK() bool { return r.Err == nil }

// FrameLost reports whether a frame of the cycle did not come back.
func (r CycleResult) FrameLost() bool { return r.Lost > 0 }

// AllInState reports whether the AL status read found every one of n
// slaves in state s without an error indication.
func (r CycleResult) AllInState(n int, s esc.ALState) bool {
	return int(r.Responding) == n && r.ALStates == uint8(s) && !r.ALError
}

// RTT returns the round-trip time of the cycle's frames, or 0 when a frame
// was lost.
func (r CycleResult) RTT() time.Duration {
	if r.RecvTime == 0 {
		return 0
	}
	return time.Duration(r.RecvTime - r.SendTime)
}

// cyclicFrame is one pre-allocated frame of the cyclic exchange: its buffer,
// the part of the image its LRW datagram carries (if any), whether it also
// reads AL status, and its state in the current cycle.
type cyclicFrame struct {
	buf     []byte
	builder wire.Builder
	chunk   chunk
	lrw     bool // carries an LRW datagram over chunk
	status  bool // carries the BRD of AL status (after the LRW, if any)
	index   uint8
	done    bool
}

// first returns the command of the frame's first datagram.
func (f *cyclicFrame) first() wire.Command {
	if f.lrw {
		return wire.LRW
	}
	return wire.BRD
}

// Cyclic is the process-data exchange: a fixed set of frames, each with one
// LRW datagram over part of the ProcessImage, the first one also reading AL
// status of all slaves, built once when the image is mapped. The cycle
// engine calls Exchange (or ExchangeUntil) every cycle from one goroutine;
// neither allocates. Nothing else may use the master's link meanwhile.
type Cyclic struct {
	link     link.Link
	bus      *Bus // for the shared datagram index counter and source address
	image    *ProcessImage
	frames   []cyclicFrame
	rx       []byte
	timeout  time.Duration
	clock    func() int64
	counters *counters
	cycle    uint64
	expected uint16
	// timeoutErr is the link's timeout error value as last seen. Links
	// return one pre-allocated value, so after the first timeout a plain
	// comparison recognises it: errors.Is walks type assertions whose
	// per-call-site caches the runtime fills at random moments, allocating
	// — not something a cycle may do.
	timeoutErr error
}

func newCyclic(bus *Bus, image *ProcessImage, l layout, timeout time.Duration, clock func() int64, c *counters) *Cyclic {
	cy := &Cyclic{
		link:     bus.link,
		bus:      bus,
		image:    image,
		rx:       make([]byte, link.MaxFrameSize),
		timeout:  timeout,
		clock:    clock,
		counters: c,
	}
	for _, ch := range l.chunks {
		cy.frames = append(cy.frames, cyclicFrame{chunk: ch, lrw: true})
		cy.expected += ch.wantWKC
	}
	if len(cy.frames) == 0 { // no process data: the frame reads AL status only
		cy.frames = append(cy.frames, cyclicFrame{})
	}
	cy.frames[0].status = true
	for i := range cy.frames {
		f := &cy.frames[i]
		n := wire.EthernetHeaderLen + wire.HeaderLen
		if f.lrw {
			n += wire.DatagramOverhead + f.chunk.to - f.chunk.from
		}
		if f.status {
			n += statusDatagramLen
		}
		f.buf = make([]byte, n)
	}
	return cy
}

// ExpectedWKC returns the working counter a complete cycle sums to.
func (c *Cyclic) ExpectedWKC() uint16 { return c.expected }

// Frames returns how many frames one cycle sends.
func (c *Cyclic) Frames() int { return len(c.frames) }

// Exchange runs one cycle and waits at most Config.CycleTimeout for the
// answers. See ExchangeUntil.
func (c *Cyclic) Exchange() CycleResult {
	return c.ExchangeUntil(time.Now().Add(c.timeout))
}

// ExchangeUntil runs one cycle: it copies the output image into the
// frames, sends them, receives their answers until deadline, discarding
// (and counting) answers to earlier frames, copies the inputs of every
// answer into the image and reports the working counter and the AL status
// read. Inputs of a slave that did not take part read as zero in that
// cycle; inputs carried by a lost frame keep their previous value. Every
// problem is both in the result and in the master's Stats.
func (c *Cyclic) ExchangeUntil(deadline time.Time) CycleResult {
	r := c.exchange(deadline)
	c.cycle++
	r.Cycle = c.cycle
	c.counters.cycles.Add(1)
	if r.Lost > 0 {
		c.counters.lost.Add(uint64(r.Lost))
	}
	if r.Lost == 0 && r.WKC != r.ExpectedWKC {
		c.counters.wkcErrors.Add(1)
	}
	return r
}

// exchange is ExchangeUntil without the cycle number and statistics, for
// the frames bring-up sends while slaves change state.
func (c *Cyclic) exchange(deadline time.Time) CycleResult {
	r := CycleResult{ExpectedWKC: c.expected, Frames: len(c.frames)}
	c.build()
	r.SendTime = c.clock()
	pending := 0
	for i := range c.frames {
		if err := c.link.Send(c.frames[i].builder.Bytes()); err != nil {
			r.Err = err
			c.frames[i].done = true // nothing will answer it
			r.Lost++
			continue
		}
		pending++
	}
	for pending > 0 {
		n, err := c.link.Recv(c.rx, deadline)
		if err != nil {
			if !c.isTimeout(err) && r.Err == nil {
				r.Err = err
			}
			break
		}
		switch c.take(c.rx[:n], &r) {
		case answerTaken:
			pending--
		case answerStale:
			r.Stale++
			c.counters.stale.Add(1)
		case answerInvalid:
			c.counters.invalid.Add(1)
		}
	}
	if pending == 0 && r.Lost == 0 {
		r.RecvTime = c.clock()
	}
	r.Lost += pending
	switch {
	case r.Err != nil:
	case r.Lost > 0:
		r.Err = ErrFrameLost
	case r.WKC != r.ExpectedWKC:
		r.Err = ErrWKCMismatch
	}
	return r
}

// isTimeout reports whether err is the link's receive timeout, without
// allocating once the link's timeout value has been seen.
func (c *Cyclic) isTimeout(err error) bool {
	if err == c.timeoutErr {
		return true
	}
	if errors.Is(err, link.ErrTimeout) {
		c.timeoutErr = err
		return true
	}
	return false
}

// build writes this cycle's frames: fresh indexes, the output image, an
// empty AL status read.
func (c *Cyclic) build() {
	out := c.image.Outputs()
	for i := range c.frames {
		f := &c.frames[i]
		f.index = c.bus.nextIndex()
		f.done = false
		_ = f.builder.Reset(f.buf, broadcastMAC, c.bus.src)
		if f.lrw {
			data, _ := f.builder.Append(wire.LRW, f.index, uint32(logicalBase+f.chunk.from), f.chunk.to-f.chunk.from)
			if f.chunk.from < len(out) {
				copy(data, out[f.chunk.from:min(f.chunk.to, len(out))])
			}
		}
		if f.status {
			_, _ = f.builder.Append(wire.BRD, f.index, wire.PhysicalAddress(0, uint16(esc.RegALStatus)), esc.ALStatusLen)
		}
	}
}

// What take made of a received frame.
const (
	answerTaken   = iota // the answer to one of this cycle's frames
	answerStale          // an EtherCAT frame, but not one this cycle awaits
	answerInvalid        // not an EtherCAT datagram frame
)

// take matches a received frame to the frame of this cycle it answers and
// takes its inputs, working counter and AL status into r and the image.
func (c *Cyclic) take(frame []byte, r *CycleResult) int {
	var fr wire.Frame
	if fr.Decode(frame) != nil {
		return answerInvalid
	}
	it := fr.Datagrams()
	var d wire.Datagram
	if !it.Next(&d) {
		return answerInvalid
	}
	f := c.match(&d)
	if f == nil {
		return answerStale
	}
	f.done = true
	if f.lrw {
		r.WKC += d.WKC
		if f.chunk.to > c.image.outBytes {
			from := max(f.chunk.from, c.image.outBytes)
			copy(c.image.buf[from:f.chunk.to], d.Data[from-f.chunk.from:])
		}
		if f.status && !it.Next(&d) {
			return answerTaken
		}
	}
	if f.status && d.Command == wire.BRD && len(d.Data) == esc.ALStatusLen {
		st := esc.DecodeALStatus(d.Data)
		r.Responding, r.ALStates, r.ALError = d.WKC, uint8(st.State), st.Error
	}
	return answerTaken
}

// match returns the frame of this cycle that a frame starting with d
// answers, or nil.
func (c *Cyclic) match(d *wire.Datagram) *cyclicFrame {
	for i := range c.frames {
		f := &c.frames[i]
		if f.done || d.Index != f.index || d.Command != f.first() {
			continue
		}
		if f.lrw && (len(d.Data) != f.chunk.to-f.chunk.from || d.Address != uint32(logicalBase+f.chunk.from)) {
			continue
		}
		return f
	}
	return nil
}

// String describes the exchange, e.g. "1 frame(s), 6 bytes, expected WKC 8".
func (c *Cyclic) String() string {
	return fmt.Sprintf("%d frame(s), %d bytes, expected WKC %d", len(c.frames), len(c.image.buf), c.expected)
}

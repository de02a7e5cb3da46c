package master

import (
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// The frames of the cyclic exchange: building them each cycle and matching
// and taking in their answers.

// cyclicFrame is one pre-allocated frame of the cyclic exchange: its buffer,
// the part of the image its LRW datagram carries (if any), whether it also
// reads AL status, and its state in the current cycle.
type cyclicFrame struct {
	buf     []byte
	builder wire.Builder
	chunk   chunk
	lrw     bool // carries an LRW datagram over chunk
	status  bool // carries the BRD of AL status (after the LRW, if any)
	aux     bool // carries the DC and mailbox datagrams (after those)
	first   wire.Command
	index   uint8
	done    bool
	// sent is the record of this cycle's frame, under its index.
	sent *sentFrame
	// cyclicN is how many datagrams of the cyclic exchange the frame
	// carries this cycle; the acyclic datagrams of acyc[:nacyc] follow.
	cyclicN int
	acyc    [AcyclicQueueLen]*acyclicSlot
	nacyc   int
}

// sentFrame is the record of a frame of the exchange, kept under its
// datagram index until the index is handed out again, 256 frames later:
// what became of it and, once it is lost, a copy of its bytes as sent. A
// late answer to it is matched against those bytes by the rule that
// matches an answer in time (answers), and taken once.
type sentFrame struct {
	buf    []byte // a lost frame's bytes (buf[:n]), copied when it is lost
	n      int
	issued uint64    // Bus.issued when the index was handed out
	state  sentState // what became of the frame
	// exchange numbers the exchange that sent the frame (Cyclic.sends),
	// first is the index of its first frame.
	exchange uint64
	first    uint8
	// cyclic: one of the exchange's cyclic frames, which CycleResult.Lost
	// counts (not the extra acyclic frame); counted: the exchange went
	// into the statistics (ExchangeUntil, Collect; not bring-up's).
	cyclic  bool
	counted bool
	// lateTaken, on an exchange's first frame: a late answer to one of
	// the exchange's frames has counted in a CycleResult.Stale.
	lateTaken bool
}

// What became of a sent frame.
type sentState uint8

const (
	sentNone     sentState = iota // not sent (the link refused it), or not a frame of the exchange
	sentAwaited                   // its exchange is still collecting answers
	sentAnswered                  // answered in time
	sentLost                      // not answered in time: its answer may come late
	sentLate                      // its late answer came
)

// lose marks f lost when it is still awaited as its exchange ends, and
// keeps a copy of it for its late answer: the frame's buffer is built
// anew next cycle. Only lost frames are copied, so a cycle whose answers
// come pays nothing for it.
func (f *cyclicFrame) lose() {
	if s := f.sent; s != nil && s.state == sentAwaited {
		s.state = sentLost
		s.n = copy(s.buf, f.builder.Bytes())
	}
}

// newSentFrames returns the records of the 256 indexes, each with a
// buffer of a frame's maximum size for the copy of a lost frame (387 KiB
// in all, allocated once, touched only by losses).
func newSentFrames() *[256]sentFrame {
	var s [256]sentFrame
	bufs := make([]byte, len(s)*wire.MaxFrameLen)
	for i := range s {
		s[i].buf = bufs[i*wire.MaxFrameLen : (i+1)*wire.MaxFrameLen : (i+1)*wire.MaxFrameLen]
	}
	return &s
}

// issue hands f a fresh index, resets its builder and starts the index's
// record for the exchange being built (Cyclic.sends), whose first frame is
// c.frames[0].
func (c *Cyclic) issue(f *cyclicFrame, cyclic bool) {
	f.index = c.bus.nextIndex()
	s := &c.sent[f.index]
	first := f.index
	if f != &c.frames[0] {
		first = c.frames[0].index
	}
	*s = sentFrame{buf: s.buf, issued: c.bus.issued, exchange: c.sends, first: first, cyclic: cyclic}
	f.sent = s
	_ = f.builder.Reset(f.buf, broadcastMAC, c.bus.src)
}

// baseLen is the size of the frame without the auxiliary datagrams.
func (f *cyclicFrame) baseLen() int {
	n := wire.EthernetHeaderLen + wire.HeaderLen
	if f.lrw {
		n += wire.DatagramOverhead + f.chunk.to - f.chunk.from
	}
	if f.status {
		n += statusDatagramLen
	}
	return n
}

// build writes this cycle's frames: fresh indexes, the output image, an
// empty AL status read, the auxiliary datagrams.
func (c *Cyclic) build() {
	out := c.image.Outputs()
	c.auxBack = false
	c.sends++
	for i := range c.frames {
		f := &c.frames[i]
		c.issue(f, true)
		f.done = false
		if f.lrw {
			data, _ := f.builder.Append(wire.LRW, f.index, uint32(logicalBase+f.chunk.from), f.chunk.to-f.chunk.from)
			if f.chunk.from < len(out) {
				copy(data, out[f.chunk.from:min(f.chunk.to, len(out))])
			}
		}
		if f.status {
			_, _ = f.builder.Append(wire.BRD, f.index, wire.PhysicalAddress(0, uint16(esc.RegALStatus)), esc.ALStatusLen)
		}
		if f.aux {
			c.buildAux(f)
		}
		switch {
		case f.lrw:
			f.first = wire.LRW
		case f.status:
			f.first = wire.BRD
		default:
			f.first = c.auxFirst()
		}
		f.cyclicN, f.nacyc = f.builder.Count(), 0
	}
	c.carryAcyclic()
}

// carryAcyclic moves queued acyclic datagrams into this cycle's frames, in
// queue order: into the room the cyclic frames leave, then into the extra
// frame when the measured slack has room for it (c.extraSent). A datagram
// that fits nowhere waits, with those after it, for the next cycle.
func (c *Cyclic) carryAcyclic() {
	c.extraSent, c.nCarried = false, 0
	q := c.acyclic
	s := q.peek()
	if s == nil {
		return
	}
	for i := range c.frames {
		f := &c.frames[i]
		for s != nil && c.appendAcyclic(f, s) {
			q.take()
			s = q.peek()
		}
		if s == nil {
			return
		}
	}
	if !c.slackForExtra() {
		q.putBack(s)
		return
	}
	f := &c.extra
	c.issue(f, false)
	f.done, f.cyclicN, f.nacyc = false, 0, 0
	f.first = s.cmd
	for s != nil && c.appendAcyclic(f, s) {
		q.take()
		s = q.peek()
	}
	if s != nil {
		q.putBack(s)
	}
	c.extraSent = f.nacyc > 0
}

// appendAcyclic adds the queued datagram s to frame f if it fits.
func (c *Cyclic) appendAcyclic(f *cyclicFrame, s *acyclicSlot) bool {
	d, err := f.builder.Append(s.cmd, f.index, s.address, s.n)
	if err != nil {
		return false
	}
	if s.cmd.Writes() {
		copy(d, s.data[:s.n])
	}
	f.acyc[f.nacyc] = s
	f.nacyc++
	c.nCarried++
	return true
}

// slackForExtra reports whether one more frame fits in this cycle: the
// frame round trip last measured, doubled for the frame queued behind the
// cyclic ones, must end before the exchange's deadline.
func (c *Cyclic) slackForExtra() bool {
	if c.lastRTT <= 0 {
		return false
	}
	return c.clock()+2*c.lastRTT < c.deadline
}

// resolveAcyclic hands the answers of f's acyclic datagrams (in the
// received frame fr) back to their requesters; fr nil: f was lost.
func resolveAcyclic(f *cyclicFrame, fr *wire.Frame) {
	if f.nacyc == 0 {
		return
	}
	var it wire.DatagramIter
	var d wire.Datagram
	if fr != nil {
		it = fr.Datagrams()
		for range f.cyclicN {
			if !it.Next(&d) {
				fr = nil
				break
			}
		}
	}
	for i := range f.nacyc {
		if fr != nil && it.Next(&d) {
			resolve(f.acyc[i], &d)
		} else {
			resolve(f.acyc[i], nil)
		}
		f.acyc[i] = nil
	}
	f.nacyc = 0
}

// What take made of a received frame.
const (
	answerTaken     = iota // the answer to one of this cycle's frames
	answerLate             // a late answer, the first to a frame of a counted cycle that lost it
	answerLateAgain        // a late answer to another frame of such a cycle
	answerStale            // a late answer to a frame of no counted cycle (see late)
	answerInvalid          // not an EtherCAT datagram frame
	answerForeign          // not from the segment: another source
	answerMismatch         // from the segment's address, answers no frame sent
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
		return c.late(&fr, &d)
	}
	if kind := answers(f.builder.Bytes(), &fr); kind != answerTaken {
		return kind // the frame stays in flight: its answer may still come
	}
	f.done = true
	f.sent.state = sentAnswered
	resolveAcyclic(f, &fr)
	if f == &c.extra {
		return answerTaken
	}
	more := true // d holds a datagram not yet looked at
	if f.lrw {
		r.WKC += d.WKC
		if f.chunk.to > c.image.outBytes {
			from := max(f.chunk.from, c.image.outBytes)
			copy(c.image.buf[from:f.chunk.to], d.Data[from-f.chunk.from:])
		}
		more = it.Next(&d)
	}
	if f.status && more {
		if d.Command == wire.BRD && len(d.Data) == esc.ALStatusLen {
			st := esc.DecodeALStatus(d.Data)
			r.Responding, r.ALStates, r.ALError = d.WKC, uint8(st.State), st.Error
			r.StatusRead = true
		}
		more = it.Next(&d)
	}
	if f.aux && more {
		c.auxBack = true
		c.takeAux(&it, &d, r)
	}
	return answerTaken
}

// answers checks that the received frame fr answers the frame sent: it
// comes from the segment (the master's source address, with the
// locally-administered bit that an ESC's port 0 sets allowed — ET1100
// datasheet, "Frame processing": the source MAC is modified on port 0),
// and carries the same datagrams: as many, each with the same command,
// index and length, the same address except the position an
// auto-increment or broadcast datagram counts up on its way, and the
// same last-datagram flags. A slave changes only a datagram's data,
// working counter, IRQ field and that position. Anything else was not
// made by the segment out of this frame.
func answers(sent []byte, fr *wire.Frame) int {
	if !wire.FromSegment(fr.Source(), sent[6:12]) {
		return answerForeign
	}
	var sf wire.Frame
	if sf.Decode(sent) != nil {
		return answerMismatch
	}
	if sf.Header.Length != fr.Header.Length {
		return answerMismatch
	}
	si, gi := sf.Datagrams(), fr.Datagrams()
	var s, g wire.Datagram
	for {
		sok, gok := si.Next(&s), gi.Next(&g)
		if sok != gok {
			return answerMismatch
		}
		if !sok {
			break
		}
		if s.Command != g.Command || s.Index != g.Index || len(s.Data) != len(g.Data) {
			return answerMismatch
		}
		switch s.Command.Addressing() {
		case wire.AddressingPosition, wire.AddressingBroadcast:
			if s.ADO() != g.ADO() {
				return answerMismatch
			}
		default:
			if s.Address != g.Address {
				return answerMismatch
			}
		}
		if g.WKC < s.WKC {
			return answerMismatch // no slave takes a count away
		}
	}
	if gi.Err() != nil {
		return answerMismatch
	}
	return answerTaken
}

// late tells a frame that answers none of this cycle's frames: a late
// answer, or junk. A late answer is the segment's answer (answers) to a
// frame an earlier exchange sent and did not get an answer to, under an
// index not handed out again since, and only the first such answer: its
// record says so. A late answer to a cyclic frame of a counted exchange
// (one whose frames Lost counted) counts in this cycle's result when it is
// the first of its exchange (answerLate), so that the cycles with a late
// answer never outnumber those that lost a frame, and in the master's late
// frames in any case (answerLateAgain too); any other late answer (bring-up,
// the extra acyclic frame) in the stale frames only (answerStale). Anything
// else is junk: foreign, from another source than the segment, or
// mismatched.
func (c *Cyclic) late(fr *wire.Frame, d *wire.Datagram) int {
	if !wire.FromSegment(fr.Source(), c.bus.src[:]) {
		return answerForeign
	}
	s := &c.sent[d.Index]
	if s.state != sentLost || c.bus.issued-s.issued > 0xFF {
		return answerMismatch
	}
	if kind := answers(s.buf[:s.n], fr); kind != answerTaken {
		return kind
	}
	s.state = sentLate
	if !s.cyclic || !s.counted {
		return answerStale
	}
	head := &c.sent[s.first]
	if head.exchange != s.exchange || head.lateTaken {
		return answerLateAgain
	}
	head.lateTaken = true
	return answerLate
}

// match returns the frame of this cycle that a frame starting with d
// answers, or nil.
func (c *Cyclic) match(d *wire.Datagram) *cyclicFrame {
	if f := &c.extra; c.extraSent && !f.done && d.Index == f.index && d.Command == f.first {
		return f
	}
	for i := range c.frames {
		f := &c.frames[i]
		if f.done || d.Index != f.index || d.Command != f.first {
			continue
		}
		if f.lrw && (len(d.Data) != f.chunk.to-f.chunk.from || d.Address != uint32(logicalBase+f.chunk.from)) {
			continue
		}
		return f
	}
	return nil
}

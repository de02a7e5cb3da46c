package master

import (
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/link"
)

// The cyclic process-data exchange: what one cycle achieved (CycleResult)
// and the exchange itself (Cyclic), which sends a cycle's frames, collects
// their answers and counts what went wrong. The frames are in
// cyclic_frame.go, the DC and mailbox datagrams in cyclic_aux.go.

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
	// AcyclicFrames is 1 when the cycle sent one more frame for queued
	// acyclic datagrams that the cyclic frames had no room for, and
	// AcyclicLost 1 when that frame did not come back. Neither is part of
	// Frames, Lost or Err: the process data does not depend on them.
	AcyclicFrames int
	AcyclicLost   int
	// Acyclic counts the queued acyclic datagrams the cycle carried, in
	// its own frames or in the extra one.
	Acyclic int
	// Stale counts the earlier cycles whose first late answer this cycle
	// discarded: the segment's answer to a frame a cycle counted lost
	// (Lost), come after its deadline. A cycle's frames are late once in
	// the cycles that take in their late answers, however many of them
	// come and whenever, so the cycles with Stale > 0 never outnumber
	// those with Lost > 0. Every late answer, also a cycle's second, one
	// to the extra acyclic frame or to a frame bring-up sent, counts in
	// Stats.StaleFrames.
	Stale int
	// Responding is the number of slaves that answered the AL status read
	// riding in the first frame (BRD 0x0130), ALStates the OR of their
	// state nibbles (0x08: all in OP; 0x0C: some in SAFEOP, …) and
	// ALError whether one of them shows an error indication. All zero when
	// the first frame was lost.
	Responding uint16
	ALStates   uint8
	ALError    bool
	// StatusRead tells whether the AL status read came back this cycle
	// (in the answer to the first frame); without it Responding, ALStates
	// and ALError say nothing about the bus.
	StatusRead bool
	// SendTime is taken just before the first frame is sent, RecvTime when
	// the last answer has arrived (zero when a frame was lost), both from
	// Config.Clock in nanoseconds.
	SendTime int64
	RecvTime int64

	// DCTime is the reference clock's system time (ns since 2000-01-01)
	// as the drift compensation datagram (FRMW 0x0910) read it when the
	// frame passed the reference; DCValid tells whether it did (DC
	// configured, frame back, reference answered). DCWKC is that
	// datagram's working counter, DCExpectedWKC the number of clocks with
	// a system time it should reach (the reference reads, every other
	// clock writes). A difference is counted in Stats.DCWKCErrors and
	// does not set Err; DCWKC is not part of WKC.
	DCTime        uint64
	DCValid       bool
	DCWKC         uint16
	DCExpectedWKC uint16
	// DCDiff is the system time difference (0x092C) of the clock at ring
	// position DCDiffPosition, read this cycle (one clock per cycle, round
	// robin over the clocks with a system time other than the reference,
	// whose register the drift compensation does not update; a segment
	// whose only clock is the reference reads the reference's). It is the
	// ESC's filtered mean of local copy minus received system time in ns:
	// positive when the slave's clock is ahead of the reference (0x092C
	// bit 31 clear), negative when behind (bit 31 set). DCDiffValid tells
	// whether the read succeeded; DCDiffPosition is set whenever DC is
	// configured.
	DCDiff         int32
	DCDiffPosition int
	DCDiffValid    bool

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

// Cyclic is the process-data exchange: a fixed set of frames, each with one
// LRW datagram over part of the ProcessImage, the first one also reading AL
// status of all slaves, built once when the image is mapped. The cycle
// engine calls Exchange (or ExchangeUntil) every cycle from one goroutine;
// neither allocates. Nothing else may use the master's link meanwhile:
// other code's datagrams ride in the cycle's frames (QueueAcyclic).
//
// After BringUp (or ConfigureDCWith on a mapped image) the first frame
// also carries auxiliary datagrams, in this order:
//
//   - with distributed clocks: an FRMW of the reference clock's system time
//     (0x0910, 8 bytes), the continuous drift compensation, and an FPRD of
//     one clock's system time difference (0x092C), round robin;
//   - with slaves that have a mailbox: an FPRD of the whole send mailbox of
//     the slave found full in the previous cycle, which empties it, and an
//     FPRD of one slave's SM1 status byte (0x080D), round robin.
//
// A CoE emergency read out of a mailbox is queued for Master.Emergencies;
// any other message is dropped and counted (Stats.MailboxDiscarded). A
// slave with an SDO transfer in progress (the acyclic client, through the
// acyclic queue) is left out of the polling until the transfer ends, so the
// polling never takes the answer the client waits for; an emergency sent
// meanwhile is the client's to report. A message whose read-out
// frame is lost is lost with it (the slave has released it). When the
// auxiliary datagrams do not fit beside the first LRW they travel in an
// extra frame of their own at the end of the cycle.
type Cyclic struct {
	m        *Master // set by attach: slaves' mailboxes, emergency queue
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
	base     int // frames without the auxiliary-only one
	auxFrame int // index of the frame carrying the auxiliary datagrams, -1 when none
	auxBack  bool
	dc       cyclicDC
	mbx      mailboxPoll
	// acyclic is the queue of datagrams other code wants sent (see
	// Master.QueueAcyclic); extra is the frame that carries those the
	// cyclic frames have no room for, sent (extraSent) only when the
	// slack allows. deadline is the current exchange's, lastRTT the
	// round trip of the last complete cycle, both in Config.Clock's ns.
	acyclic   *acyclicQueue
	extra     cyclicFrame
	extraSent bool
	nCarried  int // acyclic datagrams this exchange carries
	deadline  int64
	lastRTT   int64
	// poller is the link as a Poller, nil when it is none: Post and
	// Collect (the pipelined exchange) need it. posted is the result of
	// the frames Post sent as far as it is known before their answers,
	// postedPending and postedExtra the cyclic and acyclic frames it
	// awaits, inFlight whether a Post awaits its Collect.
	poller        link.Poller
	posted        CycleResult
	postedPending int
	postedExtra   int
	inFlight      bool
	// sent records the frames sent under each datagram index, so that a
	// late answer is matched as strictly as one in time (late); sends
	// numbers the exchanges.
	sent  *[256]sentFrame
	sends uint64
	// timeoutErr is the link's timeout error value as last seen. Links
	// return one pre-allocated value, so after the first timeout a plain
	// comparison recognises it: errors.Is walks type assertions whose
	// per-call-site caches the runtime fills at random moments, allocating
	// — not something a cycle may do.
	timeoutErr error
}

func newCyclic(bus *Bus, q *acyclicQueue, image *ProcessImage, l layout, timeout time.Duration, clock func() int64, c *counters) *Cyclic {
	cy := &Cyclic{
		acyclic:  q,
		extra:    cyclicFrame{buf: make([]byte, wire.MaxFrameLen)},
		link:     bus.link,
		bus:      bus,
		image:    image,
		rx:       make([]byte, link.MaxFrameSize),
		timeout:  timeout,
		clock:    clock,
		counters: c,
		sent:     newSentFrames(),
	}
	for _, ch := range l.chunks {
		cy.frames = append(cy.frames, cyclicFrame{chunk: ch, lrw: true})
		cy.expected += ch.wantWKC
	}
	cy.poller, _ = bus.link.(link.Poller)
	if len(cy.frames) == 0 { // no process data: the frame reads AL status only
		cy.frames = append(cy.frames, cyclicFrame{})
	}
	cy.frames[0].status = true
	for i := range cy.frames {
		// Full size: acyclic datagrams use the room the cyclic ones leave.
		cy.frames[i].buf = make([]byte, wire.MaxFrameLen)
	}
	cy.base, cy.auxFrame = len(cy.frames), -1
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
	return c.count(c.exchange(deadline))
}

// count numbers a completed exchange and adds it to the statistics.
func (c *Cyclic) count(r CycleResult) CycleResult {
	c.cycle++
	r.Cycle = c.cycle
	for i := range c.frames {
		if s := c.frames[i].sent; s != nil {
			s.counted = true // a late answer to it counts in a result
		}
	}
	c.counters.cycles.Add(1)
	c.counters.sent.Add(uint64(r.Frames))
	if r.Lost > 0 {
		c.counters.lost.Add(uint64(r.Lost))
	}
	if r.Lost == 0 && r.WKC != r.ExpectedWKC {
		c.counters.wkcErrors.Add(1)
	}
	if c.dc.on && c.auxBack && r.DCWKC != r.DCExpectedWKC {
		c.counters.dcWKCErrors.Add(1)
	}
	return r
}

// exchange is ExchangeUntil without the cycle number and statistics, for
// the frames bring-up sends while slaves change state.
func (c *Cyclic) exchange(deadline time.Time) CycleResult {
	r, pending, extra := c.send(c.clock() + int64(time.Until(deadline)))
	extraUntil := deadline
	if extra == 1 {
		// Within the measured slack, not up to the deadline: three
		// round trips of the last cycle from now.
		if until := time.Now().Add(time.Duration(3 * c.lastRTT)); until.Before(deadline) {
			extraUntil = until
		}
	}
	for pending+extra > 0 {
		wait := deadline
		if pending == 0 {
			wait = extraUntil // only the acyclic frame is still out
		}
		n, err := c.link.Recv(c.rx, wait)
		if err != nil {
			if !c.isTimeout(err) && r.Err == nil {
				r.Err = err
			}
			break
		}
		pending, extra = c.receive(c.rx[:n], &r, pending, extra)
		if pending == 0 && r.Lost == 0 && r.RecvTime == 0 {
			r.RecvTime = c.clock()
		}
	}
	c.finish(&r, pending, extra)
	return r
}

// CanPost reports whether the link lets the exchange be pipelined (Post
// and Collect): it must be a link.Poller.
func (c *Cyclic) CanPost() bool { return c.poller != nil }

// Post builds this cycle's frames from the output image and sends them
// without waiting for their answers: the pipelined exchange, as IgH's
// master and TwinCAT run their cycles. Collect, called before the next
// Post (one period later), takes the answers. collectAt is when that
// will be: the slack the extra acyclic frame may use. Post allocates
// nothing; it needs a link that is a link.Poller (CanPost).
func (c *Cyclic) Post(collectAt time.Time) {
	c.posted, c.postedPending, c.postedExtra = c.send(c.clock() + int64(time.Until(collectAt)))
	c.inFlight = true
}

// Collect takes the answers to the frames the last Post sent that have
// arrived by now, without waiting, and returns that exchange's result as
// ExchangeUntil would: a frame not answered by now is lost, an answer
// that comes later is stale. RecvTime is the kernel's receive time of the
// last answer when the link tells it (the frame round trip then leaves
// out the cycle's sleep), the time of Collect otherwise. Without a Post
// since the last Collect it returns a result of no frames and counts
// nothing. It allocates nothing.
func (c *Cyclic) Collect() CycleResult {
	if !c.inFlight || c.poller == nil {
		return CycleResult{ExpectedWKC: c.expected, Cycle: c.cycle}
	}
	c.inFlight = false
	r, pending, extra := c.posted, c.postedPending, c.postedExtra
	// The link's receive times are CLOCK_REALTIME; the cycle's clock is
	// Config.Clock. Both are read here, through the vDSO.
	offset := time.Now().UnixNano() - c.clock()
	var last int64
	for pending+extra > 0 {
		n, at, err := c.poller.Poll(c.rx)
		if err != nil {
			if r.Err == nil {
				r.Err = err
			}
			break
		}
		if n == 0 {
			break // nothing more has come
		}
		before := pending
		pending, extra = c.receive(c.rx[:n], &r, pending, extra)
		if pending < before && at != 0 {
			last = max(last, at-offset)
		}
	}
	if pending == 0 && r.Lost == 0 {
		r.RecvTime = c.clock()
		if last > r.SendTime && last < r.RecvTime {
			r.RecvTime = last
		}
	}
	c.finish(&r, pending, extra)
	return c.count(r)
}

// send builds and sends the cycle's frames, and the extra acyclic frame
// when one is due; deadline (Config.Clock ns) is when the answers must be
// in. It returns the result as far as sending tells it and the frames
// that await an answer.
func (c *Cyclic) send(deadline int64) (r CycleResult, pending, extra int) {
	r = CycleResult{ExpectedWKC: c.expected, Frames: len(c.frames)}
	if c.dc.on {
		r.DCExpectedWKC = c.dc.want
	}
	c.deadline = deadline
	c.build()
	r.Acyclic = c.nCarried
	r.SendTime = c.clock()
	for i := range c.frames {
		f := &c.frames[i]
		if err := c.link.Send(f.builder.Bytes()); err != nil {
			r.Err = err
			f.done = true // nothing will answer it
			r.Lost++
			continue
		}
		f.sent.state = sentAwaited
		pending++
	}
	if c.extraSent {
		if c.link.Send(c.extra.builder.Bytes()) == nil {
			c.extra.sent.state = sentAwaited
			extra = 1
			r.AcyclicFrames = 1
			c.counters.acyclicFrames.Add(1)
		} else {
			c.extra.done = true
		}
	}
	return r, pending, extra
}

// receive takes one received frame into r and returns the cyclic and
// acyclic frames still awaited.
func (c *Cyclic) receive(frame []byte, r *CycleResult, pending, extra int) (int, int) {
	switch c.take(frame, r) {
	case answerTaken:
		if c.extraSent && extra == 1 && c.extra.done {
			return pending, 0
		}
		return pending - 1, extra
	case answerLate:
		r.Stale++
		c.counters.late.Add(1)
		c.counters.stale.Add(1)
	case answerLateAgain:
		c.counters.late.Add(1)
		c.counters.stale.Add(1)
	case answerStale:
		c.counters.stale.Add(1)
	case answerInvalid:
		c.counters.invalid.Add(1)
	case answerForeign:
		c.counters.foreign.Add(1)
	case answerMismatch:
		c.counters.mismatch.Add(1)
	}
	return pending, extra
}

// finish settles an exchange whose answers are in or will not come:
// acyclic requesters woken, frames still awaited lost, the error set.
func (c *Cyclic) finish(r *CycleResult, pending, extra int) {
	for i := range c.frames {
		c.frames[i].lose()
	}
	if c.extraSent {
		c.extra.lose()
	}
	c.settleAcyclic(r, extra)
	if r.RecvTime != 0 {
		c.lastRTT = r.RecvTime - r.SendTime
	}
	r.Lost += pending
	switch {
	case r.Err != nil:
	case r.Lost > 0:
		r.Err = ErrFrameLost
	case r.WKC != r.ExpectedWKC:
		r.Err = ErrWKCMismatch
	}
}

// settleAcyclic marks the acyclic datagrams whose frames did not come
// back as lost and wakes their requesters; extra is 1 when the acyclic
// frame was sent and not answered.
func (c *Cyclic) settleAcyclic(r *CycleResult, extra int) {
	if c.nCarried == 0 {
		return
	}
	for i := range c.frames {
		resolveAcyclic(&c.frames[i], nil) // only those still unanswered
	}
	if c.extraSent {
		resolveAcyclic(&c.extra, nil)
		if extra == 1 {
			r.AcyclicLost = 1
			c.counters.acyclicLost.Add(1)
		}
	}
	c.acyclic.answered.Notify()
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

// String describes the exchange, e.g. "1 frame(s), 6 bytes, expected WKC 8".
func (c *Cyclic) String() string {
	return fmt.Sprintf("%d frame(s), %d bytes, expected WKC %d", len(c.frames), len(c.image.buf), c.expected)
}

package master

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/master/coe"
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

// cyclicFrame is one pre-allocated frame of the cyclic exchange: its buffer,
// the part of the image its LRW datagram carries (if any), whether it also
// reads AL status, and its state in the current cycle.
type cyclicFrame struct {
	buf     []byte
	builder wire.Builder
	chunk   chunk
	lrw     bool // carries an LRW datagram over chunk
	status  bool // carries the BRD of AL status (after the LRW, if any)
	aux     bool // carries the DC and mailbox datagrams (last)
	first   wire.Command
	index   uint8
	done    bool
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

// Cyclic is the process-data exchange: a fixed set of frames, each with one
// LRW datagram over part of the ProcessImage, the first one also reading AL
// status of all slaves, built once when the image is mapped. The cycle
// engine calls Exchange (or ExchangeUntil) every cycle from one goroutine;
// neither allocates. Nothing else may use the master's link meanwhile.
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
// Gate) is left out of the polling until the transfer ends, so the
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
		f.buf = make([]byte, f.baseLen())
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
	if c.dc.on && c.auxBack && r.DCWKC != r.DCExpectedWKC {
		c.counters.dcWKCErrors.Add(1)
	}
	return r
}

// exchange is ExchangeUntil without the cycle number and statistics, for
// the frames bring-up sends while slaves change state.
func (c *Cyclic) exchange(deadline time.Time) CycleResult {
	r := CycleResult{ExpectedWKC: c.expected, Frames: len(c.frames)}
	if c.dc.on {
		r.DCExpectedWKC = c.dc.want
	}
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
// empty AL status read, the auxiliary datagrams.
func (c *Cyclic) build() {
	out := c.image.Outputs()
	c.auxBack = false
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
		}
		more = it.Next(&d)
	}
	if f.aux && more {
		c.auxBack = true
		c.takeAux(&it, &d, r)
	}
	return answerTaken
}

// match returns the frame of this cycle that a frame starting with d
// answers, or nil.
func (c *Cyclic) match(d *wire.Datagram) *cyclicFrame {
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

// String describes the exchange, e.g. "1 frame(s), 6 bytes, expected WKC 8".
func (c *Cyclic) String() string {
	return fmt.Sprintf("%d frame(s), %d bytes, expected WKC %d", len(c.frames), len(c.image.buf), c.expected)
}

// Sizes of the auxiliary datagrams on the wire.
const (
	dcTimeDatagramLen    = wire.DatagramOverhead + 8 // FRMW 0x0910
	dcDiffDatagramLen    = wire.DatagramOverhead + 4 // FPRD 0x092C
	mbxStatusDatagramLen = wire.DatagramOverhead + 1 // FPRD of SM1's status byte
)

// regSendMailboxStatus is the status byte of SyncManager 1, the send
// mailbox (slave to master).
const regSendMailboxStatus = uint16(esc.RegSyncManager0) + esc.SyncManagerLen + smStatusOffset

// cyclicDC is the distributed-clock part of the cyclic exchange.
type cyclicDC struct {
	on      bool
	time    uint32   // FRMW address: the reference's 0x0910
	clocks  []dcPeer // slaves with a system time, in ring order
	want    uint16   // working counter of the FRMW
	next    int      // clock whose 0x092C the next cycle reads
	current int      // clock read this cycle
}

// dcPeer is a clock the cyclic exchange reads 0x092C of.
type dcPeer struct {
	diff     uint32 // FPRD address of its 0x092C
	position int
}

// mailboxPoll is the mailbox part of the cyclic exchange: it looks at one
// slave's send mailbox status per cycle and reads a full mailbox out in
// the next cycle.
type mailboxPoll struct {
	slaves  []*Slave
	next    int // slave whose status the next cycle reads
	polled  int // slave whose status this cycle reads
	pending int // slave found full, to read out next cycle; -1 none
	reading int // slave whose mailbox this cycle reads out; -1 none
	maxSize int // largest send mailbox among slaves
}

// attach connects the exchange to its master, for the slaves' mailboxes
// and the emergency queue, and lays out the auxiliary datagrams. BringUp
// and ConfigureDCWith call it; outside the cycle only.
func (c *Cyclic) attach(m *Master) {
	c.m = m
	c.mbx = mailboxPoll{pending: -1, reading: -1}
	room := wire.MaxPayloadLen - dcTimeDatagramLen - dcDiffDatagramLen - mbxStatusDatagramLen - wire.DatagramOverhead
	for _, s := range m.slaves {
		size := int(s.Mailbox.SendSize)
		if !s.HasMailbox || size < coe.MailboxHeaderLen {
			continue
		}
		if size > room {
			m.log.Warn("cyclic mailbox polling leaves out a slave whose send mailbox does not fit a frame",
				"slave", s.String(), "size", size)
			continue
		}
		c.mbx.slaves = append(c.mbx.slaves, s)
		c.mbx.maxSize = max(c.mbx.maxSize, size)
	}
	c.layoutAux()
}

// enableDC makes the exchange carry the drift compensation for setup; a
// setup without clocks leaves it off.
func (c *Cyclic) enableDC(setup DCSetup) {
	if setup.Reference == nil || len(setup.Clocks) == 0 {
		return
	}
	c.dc = cyclicDC{on: true, want: uint16(len(setup.Clocks)),
		time: wire.PhysicalAddress(setup.Reference.StationAddress, uint16(esc.RegDCSystemTime))}
	for _, cl := range setup.Clocks {
		if cl.Slave == setup.Reference && len(setup.Clocks) > 1 {
			continue // its 0x092C is not kept up to date: no news
		}
		c.dc.clocks = append(c.dc.clocks, dcPeer{position: cl.Slave.Position,
			diff: wire.PhysicalAddress(cl.Slave.StationAddress, uint16(esc.RegDCSystemDiff))})
	}
	c.layoutAux()
}

// auxLen is the most bytes the auxiliary datagrams take in a frame.
func (c *Cyclic) auxLen() int {
	n := 0
	if c.dc.on {
		n += dcTimeDatagramLen + dcDiffDatagramLen
	}
	if len(c.mbx.slaves) > 0 {
		n += mbxStatusDatagramLen + wire.DatagramOverhead + c.mbx.maxSize
	}
	return n
}

// layoutAux puts the auxiliary datagrams into the first frame when they
// fit beside what it carries, else into an extra frame, and sizes the
// frame buffers for the largest cycle.
func (c *Cyclic) layoutAux() {
	c.frames = c.frames[:c.base]
	c.auxFrame = -1
	f0 := &c.frames[0]
	if f0.aux {
		f0.aux = false
		f0.buf = make([]byte, f0.baseLen())
	}
	n := c.auxLen()
	switch {
	case n == 0:
		return
	case f0.baseLen()+n <= wire.MaxFrameLen:
		f0.aux = true
		f0.buf = make([]byte, f0.baseLen()+n)
		c.auxFrame = 0
	default:
		c.frames = append(c.frames, cyclicFrame{aux: true, buf: make([]byte, wire.EthernetHeaderLen+wire.HeaderLen+n)})
		c.auxFrame = len(c.frames) - 1
	}
}

// auxFirst returns the command of the first auxiliary datagram.
func (c *Cyclic) auxFirst() wire.Command {
	if c.dc.on {
		return wire.FRMW
	}
	return wire.FPRD
}

// buildAux appends this cycle's auxiliary datagrams to f.
func (c *Cyclic) buildAux(f *cyclicFrame) {
	if c.dc.on {
		_, _ = f.builder.Append(wire.FRMW, f.index, c.dc.time, 8)
		c.dc.current = c.dc.next
		c.dc.next = (c.dc.next + 1) % len(c.dc.clocks)
		_, _ = f.builder.Append(wire.FPRD, f.index, c.dc.clocks[c.dc.current].diff, 4)
	}
	p := &c.mbx
	if len(p.slaves) == 0 {
		return
	}
	// The read-out goes before the status poll, so a poll of the same
	// slave sees the mailbox emptied (or refilled) rather than the message
	// being read.
	p.reading, p.pending = p.pending, -1
	if p.reading >= 0 && p.slaves[p.reading].mailboxClaimed() {
		p.reading = -1 // the SDO client has it now
	}
	if p.reading >= 0 {
		s := p.slaves[p.reading]
		_, _ = f.builder.Append(wire.FPRD, f.index, wire.PhysicalAddress(s.StationAddress, s.Mailbox.SendOffset), int(s.Mailbox.SendSize))
	}
	p.polled = p.next
	p.next = (p.next + 1) % len(p.slaves)
	_, _ = f.builder.Append(wire.FPRD, f.index, wire.PhysicalAddress(p.slaves[p.polled].StationAddress, regSendMailboxStatus), 1)
}

// takeAux reads the answers to the auxiliary datagrams, d being the first
// of them. Answers that do not look like what was sent are ignored.
func (c *Cyclic) takeAux(it *wire.DatagramIter, d *wire.Datagram, r *CycleResult) {
	if c.dc.on {
		if d.Command == wire.FRMW && len(d.Data) == 8 {
			r.DCWKC = d.WKC
			r.DCTime = binary.LittleEndian.Uint64(d.Data)
			r.DCValid = d.WKC > 0 && r.DCTime != 0
		}
		if !it.Next(d) {
			return
		}
		peer := c.dc.clocks[c.dc.current]
		r.DCDiffPosition = peer.position
		if d.Command == wire.FPRD && d.Address == peer.diff && len(d.Data) == 4 && d.WKC == 1 {
			r.DCDiff, r.DCDiffValid = decodeSystemTimeDiff(binary.LittleEndian.Uint32(d.Data)), true
		}
		if !it.Next(d) {
			return
		}
	}
	p := &c.mbx
	if len(p.slaves) == 0 {
		return
	}
	if p.reading >= 0 {
		s := p.slaves[p.reading]
		if d.Command == wire.FPRD && d.ADP() == s.StationAddress && len(d.Data) == int(s.Mailbox.SendSize) && d.WKC == 1 {
			c.takeMailbox(s, d.Data)
		}
		if !it.Next(d) {
			return
		}
	}
	s := p.slaves[p.polled]
	if d.Command == wire.FPRD && d.Address == wire.PhysicalAddress(s.StationAddress, regSendMailboxStatus) &&
		len(d.Data) == 1 && d.WKC == 1 && d.Data[0]&smStatusMailboxFull != 0 && p.pending < 0 && !s.mailboxClaimed() {
		p.pending = p.polled
	}
}

// takeMailbox handles a message read out of slave s's send mailbox: a CoE
// emergency is queued, anything else counted and dropped. It checks every
// length first, so the decoders never take their (allocating) error path.
func (c *Cyclic) takeMailbox(s *Slave, b []byte) {
	h, err := coe.DecodeMailboxHeader(b)
	body := coe.MailboxHeaderLen + int(h.Length)
	if err != nil || body > len(b) || h.Type != coe.TypeCoE || int(h.Length) < coe.HeaderLen+coe.EmergencyLen {
		c.counters.mailboxDiscarded.Add(1)
		return
	}
	ch, err := coe.DecodeHeader(b[coe.MailboxHeaderLen:body])
	if err != nil || ch.Service != coe.ServiceEmergency {
		c.counters.mailboxDiscarded.Add(1)
		return
	}
	e, err := coe.DecodeEmergency(b[coe.MailboxHeaderLen+coe.HeaderLen : body])
	if err != nil {
		c.counters.mailboxDiscarded.Add(1)
		return
	}
	c.m.noteEmergency(s, e)
}

// decodeSystemTimeDiff turns register 0x092C into signed nanoseconds,
// positive when the local copy of the system time is ahead of (greater
// than or equal to) the received one: bit 31 set means it is smaller.
func decodeSystemTimeDiff(v uint32) int32 {
	mag := int32(v & 0x7FFFFFFF)
	if v&0x80000000 != 0 {
		return -mag
	}
	return mag
}

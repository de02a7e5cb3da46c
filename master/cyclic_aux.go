package master

import (
	"encoding/binary"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// The auxiliary datagrams of the cyclic exchange: the distributed-clock
// drift compensation and system time difference reads, and the polling of
// the slaves' send mailboxes for emergencies.

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

// layoutAux puts the auxiliary datagrams into the cyclic frame with the
// most room left beside what it carries (with a large image that is
// typically the last LRW frame, not the first), and only when none has
// room into an extra frame: a 2 KiB image with mailbox polling takes two
// frames, not three.
func (c *Cyclic) layoutAux() {
	c.frames = c.frames[:c.base]
	c.auxFrame = -1
	for i := range c.frames {
		c.frames[i].aux = false
	}
	n := c.auxLen()
	if n == 0 {
		return
	}
	best, room := -1, 0
	for i := range c.frames {
		if r := wire.MaxFrameLen - c.frames[i].baseLen(); r >= n && r > room {
			best, room = i, r
		}
	}
	if best < 0 {
		c.frames = append(c.frames, cyclicFrame{aux: true, buf: make([]byte, wire.MaxFrameLen)})
		best = len(c.frames) - 1
	}
	c.frames[best].aux = true
	c.auxFrame = best
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

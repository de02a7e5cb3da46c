package sim

import (
	"github.com/ecagent/ecagent/ethercat/esc"
)

// memory is an ESC's physical address space as EtherCAT sees it: the
// registers 0x0000–0x0FFF with their access map, the process RAM from
// 0x1000 up to the chip's RAM size, and the buffers in which writes to
// 3-buffer SyncManagers wait until the last byte arrives.
type memory struct {
	b      [0x10000]byte
	shadow [0x10000]byte
	acc    *accessMap
	ramEnd int // end of the process RAM
}

// can reports whether EtherCAT may access address a with flag (accRead or
// accWrite): registers by the access map, RAM up to its size.
func (m *memory) can(a int, flag uint8) bool {
	if a < 0x1000 {
		return m.acc[a]&flag != 0
	}
	return a < m.ramEnd
}

// access collects, during one datagram at one device, what needs doing once
// the datagram has passed: SyncManagers whose first or last byte was
// written or whose last byte was read, the register range written, whether
// an EEPROM command was issued.
type access struct {
	wroteFirst, wroteLast, readLast uint16 // SyncManager bit sets
	regLo, regHi                    int    // registers written, regLo > regHi when none
	siiCommand                      bool
}

func newAccess() access { return access{regLo: 0x1000, regHi: -1} }

// readByte returns the byte at a for an EtherCAT read and whether the read
// is allowed.
func (d *Device) readByte(a int, ac *access) (byte, bool) {
	if a > 0xFFFF || !d.mem.can(a, accRead) {
		return 0, false
	}
	if sm := d.smAt(a); sm >= 0 {
		s := &d.sms[sm]
		if !s.allows(false) {
			return 0, false
		}
		if a == s.end-1 {
			ac.readLast |= 1 << sm
		}
	}
	return d.mem.b[a], true
}

// writeByte writes the bits of v selected by mask to a for an EtherCAT
// write and reports whether the write is allowed.
func (d *Device) writeByte(a int, v, mask byte, ac *access) bool {
	if a > 0xFFFF || !d.mem.can(a, accWrite) {
		return false
	}
	if sm := d.smAt(a); sm >= 0 {
		s := &d.sms[sm]
		if !s.allows(true) {
			return false
		}
		if s.mailbox {
			d.mem.b[a] = d.mem.b[a]&^mask | v&mask
		} else {
			d.mem.shadow[a] = d.mem.shadow[a]&^mask | v&mask
		}
		if a == s.start {
			ac.wroteFirst |= 1 << sm
		}
		if a == s.end-1 {
			ac.wroteLast |= 1 << sm
		}
		return true
	}
	if a < 0x1000 {
		if (a == int(esc.RegALControl) || a == int(esc.RegALControl)+1) && d.esm.unread() {
			// Without device emulation AL control is a mailbox: until
			// the controller has read a request, EtherCAT cannot write
			// another (ET1100 datasheet section II, 0x0120).
			return false
		}
		if a >= int(esc.RegSIIControl) && a <= int(esc.RegSIIData)+7 && d.eeprom.locked(d.mem.b[:]) {
			return true // accepted, but the interface ignores it
		}
		if a == int(esc.RegSIIControl)+1 {
			ac.siiCommand = true
		}
		ac.regLo, ac.regHi = min(ac.regLo, a), max(ac.regHi, a)
	}
	d.mem.b[a] = d.mem.b[a]&^mask | v&mask
	return true
}

// physRead serves a physical read of len(p) bytes at ado: each readable
// byte replaces (or, for broadcast reads, is ORed into) the datagram byte.
// It reports whether any byte was read.
func (d *Device) physRead(ado int, p []byte, or bool, f *frameContext, ac *access) bool {
	d.refreshRegisters(ado, ado+len(p)-1, f)
	ok := false
	for i := range p {
		v, good := d.readByte(ado+i, ac)
		if !good {
			continue
		}
		if or {
			p[i] |= v
		} else {
			p[i] = v
		}
		ok = true
	}
	return ok
}

// physWrite serves a physical write of p at ado and reports whether any
// byte was written.
func (d *Device) physWrite(ado int, p []byte, ac *access) bool {
	ok := false
	for i, v := range p {
		if d.writeByte(ado+i, v, 0xFF, ac) {
			ok = true
		}
	}
	return ok
}

// physReadWrite serves APRW, FPRW and BRW: each byte is read (replacing or,
// for BRW, ORed into the datagram) and the incoming byte written. It
// reports whether any byte was read and whether any was written.
func (d *Device) physReadWrite(ado int, p []byte, or bool, f *frameContext, ac *access) (rd, wr bool) {
	d.refreshRegisters(ado, ado+len(p)-1, f)
	for i := range p {
		in := p[i]
		v, good := d.readByte(ado+i, ac)
		if good {
			rd = true
			if or {
				p[i] = in | v
			} else {
				p[i] = v
			}
		}
		if d.writeByte(ado+i, in, 0xFF, ac) {
			wr = true
		}
	}
	return rd, wr
}

// finish does what a datagram's accesses leave to do: register side
// effects, 3-buffer commits (per SyncManager, of the buffers the datagram
// wrote whole), mailbox hand-overs.
func (d *Device) finish(ac *access, f *frameContext) {
	if ac.regLo <= ac.regHi {
		d.registersWritten(ac.regLo, ac.regHi, f)
	}
	if ac.siiCommand {
		d.eeprom.command(d.mem.b[:], f.arrival)
	}
	if ac.wroteLast|ac.readLast == 0 {
		return // no SyncManager buffer completed
	}
	for i := range d.nsm {
		s := &d.sms[i]
		if ac.wroteLast&(1<<i) != 0 {
			if s.mailbox {
				s.full = true
				d.setSMStatus(i, smStatusFull|smStatusWriteEvent)
				if d.mbx != nil {
					d.mbx.received(i, f.arrival)
				}
			} else if ac.wroteFirst&(1<<i) != 0 {
				// A 3-buffer SyncManager hands the master's buffer to
				// the application only when one datagram wrote it from
				// its first byte to its last.
				copy(d.mem.b[s.start:s.end], d.mem.shadow[s.start:s.end])
				d.setSMStatus(i, smStatusWriteEvent)
				d.triggerWatchdog(i, f.arrival)
			}
		}
		if ac.readLast&(1<<i) != 0 {
			if s.mailbox {
				s.full = false
				d.wakeMailbox() // room for the next message
				st := uint8(smStatusReadEvent)
				switch d.spec.fw.afterRead {
				case reopenMailbox:
					st = smStatusReopened
				case clearReadEvent:
					st = 0
				}
				d.setSMStatus(i, st)
			} else {
				d.setSMStatus(i, smStatusReadEvent)
			}
		}
	}
}

// refreshRegisters brings registers whose value is live up to date before
// a read of [lo, hi].
func (d *Device) refreshRegisters(lo, hi int, f *frameContext) {
	if d.hasDC && lo <= int(esc.RegDCSystemTime)+7 && hi >= int(esc.RegDCSystemTime) {
		d.clock.refreshSystemTime(d.mem.b[:], f.arrival)
	}
	if d.hasDC {
		d.refreshSync(lo, hi, f.arrival)
	}
}

// overlaps reports whether [lo, hi] and [a, b] intersect.
func overlaps(lo, hi, a, b int) bool { return lo <= b && hi >= a }

// registersWritten applies the side effects of an EtherCAT write to the
// registers [lo, hi], which already hold the written values.
func (d *Device) registersWritten(lo, hi int, f *frameContext) {
	regs := d.mem.b[:]
	if overlaps(lo, hi, int(esc.RegDLControl), int(esc.RegDLControl)+3) {
		d.updateDLStatus()
	}
	if overlaps(lo, hi, int(esc.RegALControl), int(esc.RegALControl)+1) {
		v := uint16(regs[esc.RegALControl]) | uint16(regs[esc.RegALControl+1])<<8
		d.esm.control(v, d, f.arrival, d.esm.time.draw(d.rng))
		d.stateChanged()
	}
	if overlaps(lo, hi, int(esc.RegRxErrorCounter), int(esc.RegLostLinkCounter)+3) {
		clearErrorCounters(regs, lo, hi)
	}
	if overlaps(lo, hi, int(esc.RegFMMU0), int(esc.RegSyncManager0)-1) {
		d.decodeFMMUs()
	}
	if overlaps(lo, hi, int(esc.RegSyncManager0), int(esc.RegSyncManager0)+16*esc.SyncManagerLen-1) {
		d.decodeSyncManagers(lo, hi)
		d.wakeMailbox() // a mailbox enabled, or the repeat request toggled
	}
	if overlaps(lo, hi, int(esc.RegDCRecvTimePort0), int(esc.RegDCRecvTimePort0)) {
		d.clock.latch(regs, f.arrival, d.downPort, f.back, f.hasBack)
	}
	if d.hasDC && overlaps(lo, hi, int(esc.RegDCSystemTime), int(esc.RegDCSystemTime)+7) {
		from := max(lo, int(esc.RegDCSystemTime))
		to := min(hi, int(esc.RegDCSystemTime)+7)
		d.clock.systemTimeWritten(regs, regs[from:to+1], from-int(esc.RegDCSystemTime), f.arrival)
	}
	if d.hasDC && overlaps(lo, hi, int(esc.RegDCSpeedStart), int(esc.RegDCSpeedStart)+1) {
		d.clock.speedStartWritten(regs, f.arrival)
	}
	if d.hasDC && overlaps(lo, hi, int(esc.RegDCFilterDepth), int(esc.RegDCFilterDepth)) {
		d.clock.filterDepthWritten(regs)
	}
	if d.hasDC {
		d.syncRegistersWritten(lo, hi, f.arrival)
	}
}

// clearErrorCounters clears the groups of error counters that a write of
// [lo, hi] touches, whatever the value written: a write to any of
// 0x0300–0x030B clears all the invalid frame, RX and forwarded RX error
// counters; 0x030C and 0x030D clear alone; a write to any lost link
// counter clears all four (ET1100 datasheet section II, 0x0300–0x0313).
func clearErrorCounters(regs []byte, lo, hi int) {
	groups := [...][2]int{
		{int(esc.RegRxErrorCounter), int(esc.RegFwdRxErrorCounter) + 3},
		{int(esc.RegProcessingError), int(esc.RegProcessingError)},
		{int(esc.RegPDIError), int(esc.RegPDIError)},
		{int(esc.RegLostLinkCounter), int(esc.RegLostLinkCounter) + 3},
	}
	for _, g := range groups {
		if overlaps(lo, hi, g[0], g[1]) {
			clear(regs[g[0] : g[1]+1])
		}
	}
}

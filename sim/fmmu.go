package sim

import (
	"github.com/ecagent/ecagent/ethercat/esc"
)

// fmmuWindow is an active FMMU decoded into bit addresses: bits logical bits
// from logBit map onto physical bits from physBit (address·8 + bit).
type fmmuWindow struct {
	logBit  uint64
	bits    uint64
	physBit int
	typ     uint8
}

// decodeFMMUs rebuilds the device's active FMMU windows from their
// registers after the master wrote them.
func (d *Device) decodeFMMUs() {
	d.nwin = 0
	for i := range d.nfmmu {
		f := esc.DecodeFMMU(d.mem.b[esc.RegFMMU(i):])
		if !f.Active || f.Length == 0 || f.Bits() <= 0 || f.Type == 0 {
			continue
		}
		d.win[d.nwin] = fmmuWindow{
			logBit:  uint64(f.LogicalStart)*8 + uint64(f.LogicalStartBit),
			bits:    uint64(f.Bits()),
			physBit: int(f.PhysicalStart)*8 + int(f.PhysicalBit),
			typ:     f.Type,
		}
		d.nwin++
	}
}

// logical serves a logical datagram at logical byte address addr through
// the device's FMMUs. Writes take the datagram's bits as they arrive; reads
// then replace the mapped bits with the device's. It reports whether any
// read FMMU and any write FMMU moved data.
func (d *Device) logical(addr uint32, p []byte, reads, writes bool, ac *access) (rd, wr bool) {
	lo := uint64(addr) * 8
	hi := lo + uint64(len(p))*8
	if writes {
		for i := range d.nwin {
			w := &d.win[i]
			if w.typ&esc.FMMUWrite != 0 && d.mapBits(w, lo, hi, p, true, ac) {
				wr = true
			}
		}
	}
	if reads {
		for i := range d.nwin {
			w := &d.win[i]
			if w.typ&esc.FMMURead != 0 && d.mapBits(w, lo, hi, p, false, ac) {
				rd = true
			}
		}
	}
	return rd, wr
}

// mapBits moves the bits where window w and the datagram [lo, hi) overlap,
// into physical memory (write) or into the datagram (read), byte by byte
// where both sides are byte aligned. It reports whether any access was
// allowed.
func (d *Device) mapBits(w *fmmuWindow, lo, hi uint64, p []byte, write bool, ac *access) bool {
	from := max(lo, w.logBit)
	to := min(hi, w.logBit+w.bits)
	ok := false
	for b := from; b < to; {
		lb := b - lo                             // bit within the datagram
		pb := w.physBit + int(b-w.logBit)        // physical bit
		if lb%8 == 0 && pb%8 == 0 && to-b >= 8 { // whole byte
			if n := d.ramRun(pb/8, int((to-b)/8)); n > 0 {
				ok = d.moveRAM(pb/8, p[lb/8:lb/8+uint64(n)], write, ac) || ok
				b += uint64(n) * 8
				continue
			}
			if write {
				ok = d.writeByte(pb/8, p[lb/8], 0xFF, ac) || ok
			} else if v, good := d.readByte(pb/8, ac); good {
				p[lb/8], ok = v, true
			}
			b += 8
			continue
		}
		lmask := byte(1) << (lb % 8)
		pmask := byte(1) << (pb % 8)
		if write {
			var v byte
			if p[lb/8]&lmask != 0 {
				v = pmask
			}
			ok = d.writeByte(pb/8, v, pmask, ac) || ok
		} else if v, good := d.readByte(pb/8, ac); good {
			if v&pmask != 0 {
				p[lb/8] |= lmask
			} else {
				p[lb/8] &^= lmask
			}
			ok = true
		}
		b++
	}
	return ok
}

// ramRun returns how many of the n bytes from physical address a lie in
// process RAM under one SyncManager (or under none), so that moveRAM may
// move them at once; 0 when a is not in process RAM.
func (d *Device) ramRun(a, n int) int {
	if a < 0x1000 || a >= d.mem.ramEnd {
		return 0
	}
	end := min(a+n, d.mem.ramEnd)
	if sm := d.smAt(a); sm >= 0 {
		return min(end, d.sms[sm].end) - a
	}
	for i := range d.nsm { // up to the next SyncManager
		if s := &d.sms[i]; s.on && s.start > a && s.start < end {
			end = s.start
		}
	}
	return end - a
}

// moveRAM is readByte or writeByte (whole bytes) of each byte of the run
// of process RAM at a that ramRun measured: p receives the bytes (read)
// or gives them (write). It reports whether the access was allowed.
func (d *Device) moveRAM(a int, p []byte, write bool, ac *access) bool {
	end := a + len(p)
	sm := d.smAt(a)
	if sm < 0 {
		if write {
			copy(d.mem.b[a:end], p)
		} else {
			copy(p, d.mem.b[a:end])
		}
		return true
	}
	s := &d.sms[sm]
	if !s.allows(write) {
		return false
	}
	if !write {
		copy(p, d.mem.b[a:end])
		if end == s.end {
			ac.readLast |= 1 << sm
		}
		return true
	}
	if s.mailbox {
		copy(d.mem.b[a:end], p)
	} else {
		copy(d.mem.shadow[a:end], p)
	}
	if a == s.start {
		ac.wroteFirst |= 1 << sm
	}
	if end == s.end {
		ac.wroteLast |= 1 << sm
	}
	return true
}

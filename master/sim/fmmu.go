package sim

import (
	"github.com/ecagent/ecagent/master/esc"
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

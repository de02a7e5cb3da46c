package sim

// The object dictionaries of real devices differ from what their SII
// alone gives: the PDO assignments they ship with, and mapping objects the
// SII does not list. The values come from the real devices as issue 16
// reports them.

// assign makes assignment object index (0x1C12, 0x1C13, …) list pdos,
// as a device ships; the object must exist (the SII has the SyncManager).
func (od *objectDictionary) assign(index uint16, pdos ...uint16) {
	o := od.find(index)
	if o == nil {
		return
	}
	for len(o.entries) <= len(pdos) {
		k := len(o.entries)
		o.entries = append(o.entries, entry{sub: uint8(k), name: "SubIndex " + threeDigits(k),
			dataType: typeUint16, bits: 16, value: u16(0), access: o.entries[0].access})
	}
	o.entries[0].value = []byte{uint8(len(pdos))}
	for k := 1; k < len(o.entries); k++ {
		var v uint16
		if k <= len(pdos) {
			v = pdos[k-1]
		}
		o.entries[k].value = u16(v)
	}
}

// akdShipped is the real AKD's assignment: four PDOs in 0x1C12 and four
// in 0x1C13 (issue 37), 0x1600–0x1603 and 0x1A00–0x1A03. The built-in
// image assigns them already; an image whose SII assigns only 0x1600 and
// 0x1A00 gets the other three too. An image that assigns other PDOs (the
// real akd.bin: 0x1701, 0x1B01) keeps its assignment: which four the real
// drive then lists is not known here.
func akdShipped(od *objectDictionary) {
	for _, a := range []struct{ index, first uint16 }{{0x1C12, 0x1600}, {0x1C13, 0x1A00}} {
		o := od.find(a.index)
		if o == nil || len(o.entries) < 2 || string(o.entries[0].value) != "\x01" || string(o.entries[1].value) != string(u16(a.first)) {
			continue
		}
		od.assign(a.index, a.first, a.first+1, a.first+2, a.first+3)
	}
}

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

// emptyMapping adds a fixed mapping object with no entries, for a PDO a
// device assigns that carries nothing here.
func (od *objectDictionary) emptyMapping(index uint16, name string) {
	od.add(object{index: index, name: name, code: codeRecord,
		entries: []entry{{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{0}}}})
}

// akdShipped is the real AKD's assignment: four PDOs in 0x1C12 and four
// in 0x1C13, not the one each the SII lists. With the built-in image, whose
// SII assigns the flexible 0x1600 and 0x1A00, those are the four flexible
// PDOs (0x1601–0x1603 and 0x1A01–0x1A03 empty until mapped, so the process
// data stay the same). An image that assigns other PDOs (the real
// akd.bin: 0x1701, 0x1B01) keeps its assignment: which four the real drive
// then lists is not known here.
func akdShipped(od *objectDictionary) {
	for _, a := range []struct{ index, first uint16 }{{0x1C12, 0x1600}, {0x1C13, 0x1A00}} {
		o := od.find(a.index)
		if o == nil || len(o.entries) < 2 || string(o.entries[0].value) != "\x01" || string(o.entries[1].value) != string(u16(a.first)) {
			continue
		}
		od.assign(a.index, a.first, a.first+1, a.first+2, a.first+3)
	}
}

// ek1914Shipped is the real EK1914's input assignment: two TxPDOs in
// 0x1C13 (0x1C13:00 = 2). The second, 0x1A01, is empty here: what the
// real one maps is not known to the simulator.
func ek1914Shipped(od *objectDictionary) {
	od.emptyMapping(0x1A01, "TxPDO-Map 2")
	od.assign(0x1C13, 0x1A00, 0x1A01)
}

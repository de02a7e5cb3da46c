package sim

import (
	"encoding/binary"
	"sort"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// CoE data types (ETG.1000.6, basic data types) used in the dictionaries.
const (
	typeBool          = 0x0001
	typeInt16         = 0x0003
	typeUint8         = 0x0005
	typeUint16        = 0x0006
	typeUint32        = 0x0007
	typeVisibleString = 0x0009
)

// Object codes.
const (
	codeVar    = 0x07
	codeArray  = 0x08
	codeRecord = 0x09
)

// Write access of an entry.
const (
	readOnly       uint8 = iota
	writablePreOp        // writable in PREOP only (PDO assignment and mapping)
	writableAlways       // writable in PREOP, SAFEOP and OP
)

// entry is one sub-index of an object. Process data entries read the bits
// of the process image they map; only outputs written over SDO have a
// value of their own, for when no assigned PDO maps them.
type entry struct {
	sub      uint8
	name     string
	dataType uint16
	bits     int
	value    []byte
	access   uint8 // readOnly, writablePreOp or writableAlways
	// process marks an entry that PDOs map: it reads its bits where the
	// current PDO assignment puts them (an output without a mapping reads
	// its value, an input zeros).
	process bool
	// rights are the access rights a device description (ESI) gives the
	// entry, per state, with its PDO mappability; 0 derives them from
	// access and the PDO mapping objects (see mailbox.entryAccess).
	rights coe.Access
}

// object is one object of the CoE object dictionary.
type object struct {
	index   uint16
	name    string
	code    uint8
	entries []entry // sub-index order; for arrays and records entry 0 is the count
}

// objectDictionary is a device's CoE object dictionary. It is built from
// the SII (identity, name, PDO mappings and assignments, the process data
// entries) plus what a model adds.
type objectDictionary struct {
	objects []object // sorted by index
}

// newObjectDictionary builds the dictionary of a device described by desc.
func newObjectDictionary(desc *sii.Device, extra func(*objectDictionary)) *objectDictionary {
	od := &objectDictionary{}
	id := desc.Header.Identity
	od.addVar(0x1000, "Device type", typeUint32, u32(0), readOnly)
	od.addVar(0x1008, "Device name", typeVisibleString, []byte(desc.Name()), readOnly)
	od.addVar(0x1009, "Hardware version", typeVisibleString, []byte("00"), readOnly)
	od.addVar(0x100A, "Software version", typeVisibleString, []byte("01"), readOnly)
	od.add(object{index: 0x1018, name: "Identity", code: codeRecord, entries: []entry{
		{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{4}},
		{sub: 1, name: "Vendor ID", dataType: typeUint32, bits: 32, value: u32(id.VendorID)},
		{sub: 2, name: "Product code", dataType: typeUint32, bits: 32, value: u32(id.ProductCode)},
		{sub: 3, name: "Revision", dataType: typeUint32, bits: 32, value: u32(id.RevisionNumber)},
		{sub: 4, name: "Serial number", dataType: typeUint32, bits: 32, value: u32(id.SerialNumber)},
	}})
	for _, l := range [2][]sii.PDO{desc.RxPDOs, desc.TxPDOs} {
		for _, p := range l {
			od.add(mappingObject(desc, p))
		}
	}
	// SyncManager communication types and PDO assignments.
	types := object{index: 0x1C00, name: "Sync manager type", code: codeArray,
		entries: []entry{{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{uint8(len(desc.SyncManagers))}}}}
	for i, sm := range desc.SyncManagers {
		types.entries = append(types.entries, entry{sub: uint8(i + 1), name: "SubIndex " + threeDigits(i+1),
			dataType: typeUint8, bits: 8, value: []byte{uint8(sm.Type)}})
	}
	od.add(types)
	for i, sm := range desc.SyncManagers {
		if !sm.Type.IsProcessData() {
			continue
		}
		pdos := desc.TxPDOs
		name := "TxPDO assign"
		if sm.Type == sii.SMProcessDataOut {
			pdos, name = desc.RxPDOs, "RxPDO assign"
		}
		o := object{index: 0x1C10 + uint16(i), name: name, code: codeArray}
		var assigned []uint16
		for _, p := range pdos {
			if int(p.SyncManager) == i {
				assigned = append(assigned, p.Index)
			}
		}
		o.entries = append(o.entries, entry{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8,
			value: []byte{uint8(len(assigned))}, access: writablePreOp})
		for k := range max(len(assigned), 8) {
			var v uint16
			if k < len(assigned) {
				v = assigned[k]
			}
			o.entries = append(o.entries, entry{sub: uint8(k + 1), name: "SubIndex " + threeDigits(k+1),
				dataType: typeUint16, bits: 16, value: u16(v), access: writablePreOp})
		}
		od.add(o)
	}
	od.addProcessData(desc)
	if extra != nil {
		extra(od)
	}
	return od
}

// flexibleMappingEntries is how many entries the mapping object of a PDO
// with flexible mapping has room for (at least as many as the SII maps).
const flexibleMappingEntries = 8

// mappingObject returns the mapping object (0x16xx, 0x1Axx) of PDO p: its
// entries as the SII lists them. A PDO whose content is not fixed (SII
// flag) has flexible mapping: the object is writable in PREOP and has room
// for flexibleMappingEntries entries or the SII's count, if more.
func mappingObject(desc *sii.Device, p sii.PDO) object {
	name, _ := desc.StringAt(p.NameIndex)
	access := readOnly
	slots := len(p.Entries)
	if p.Flags&sii.PDOFixedContent == 0 {
		access = writablePreOp
		slots = max(slots, flexibleMappingEntries)
	}
	o := object{index: p.Index, name: name, code: codeRecord,
		entries: []entry{{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{uint8(len(p.Entries))}, access: access}}}
	for k := range slots {
		var v uint32
		if k < len(p.Entries) {
			e := p.Entries[k]
			v = uint32(e.Index)<<16 | uint32(e.SubIndex)<<8 | uint32(e.BitLength)
		}
		o.entries = append(o.entries, entry{sub: uint8(k + 1), name: "SubIndex " + threeDigits(k+1),
			dataType: typeUint32, bits: 32, value: u32(v), access: access})
	}
	return o
}

// addProcessData adds the objects that PDO entries map (0x6000…, 0x7000…),
// each sub-index once however many PDOs map it; they read the process
// image.
func (od *objectDictionary) addProcessData(desc *sii.Device) {
	for _, l := range [2][]sii.PDO{desc.TxPDOs, desc.RxPDOs} {
		for _, p := range l {
			for _, e := range p.Entries {
				if e.Index < 0x2000 {
					continue
				}
				o := od.find(e.Index)
				if o == nil {
					od.add(object{index: e.Index, name: "Process data", code: codeRecord,
						entries: []entry{{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{0}}}})
					o = od.find(e.Index)
				}
				if o.entry(e.SubIndex) != nil {
					continue
				}
				name, _ := desc.StringAt(e.NameIndex)
				o.entries = append(o.entries, entry{sub: e.SubIndex, name: name, dataType: uint16(e.DataType),
					bits: int(e.BitLength), process: true})
				sort.Slice(o.entries, func(a, b int) bool { return o.entries[a].sub < o.entries[b].sub })
				o.entries[0].value[0] = max(o.entries[0].value[0], e.SubIndex)
			}
		}
	}
}

// add inserts o, replacing an object with the same index.
func (od *objectDictionary) add(o object) {
	i := sort.Search(len(od.objects), func(i int) bool { return od.objects[i].index >= o.index })
	if i < len(od.objects) && od.objects[i].index == o.index {
		od.objects[i] = o
		return
	}
	od.objects = append(od.objects, object{})
	copy(od.objects[i+1:], od.objects[i:])
	od.objects[i] = o
}

// addVar adds a single-valued object with the given write access.
func (od *objectDictionary) addVar(index uint16, name string, dataType uint16, value []byte, access uint8) {
	e := entry{sub: 0, name: name, dataType: dataType, bits: 8 * len(value), value: value, access: access}
	od.add(object{index: index, name: name, code: codeVar, entries: []entry{e}})
}

// find returns the object with the given index, or nil.
func (od *objectDictionary) find(index uint16) *object {
	i := sort.Search(len(od.objects), func(i int) bool { return od.objects[i].index >= index })
	if i < len(od.objects) && od.objects[i].index == index {
		return &od.objects[i]
	}
	return nil
}

// entry returns sub-index sub of o, or nil.
func (o *object) entry(sub uint8) *entry {
	for i := range o.entries {
		if o.entries[i].sub == sub {
			return &o.entries[i]
		}
	}
	return nil
}

// appendAssigned appends the entries of the PDOs that object 0x1C10+sm
// assigns to SyncManager sm, as their mapping objects list them, and
// reports false (appending nothing) when the dictionary has no such
// assignment object. An assigned PDO without a mapping object adds
// nothing.
func (od *objectDictionary) appendAssigned(dst []pdEntry, sm int) ([]pdEntry, bool) {
	a := od.find(0x1C10 + uint16(sm))
	if a == nil || len(a.entries) == 0 {
		return dst, false
	}
	n := int(a.entries[0].value[0])
	for k := 1; k <= n && k < len(a.entries); k++ {
		p := od.find(binary.LittleEndian.Uint16(a.entries[k].value))
		if p == nil || len(p.entries) == 0 {
			continue
		}
		m := int(p.entries[0].value[0])
		for j := 1; j <= m && j < len(p.entries); j++ {
			if len(p.entries[j].value) < 4 {
				continue
			}
			v := binary.LittleEndian.Uint32(p.entries[j].value)
			dst = append(dst, pdEntry{index: uint16(v >> 16), sub: uint8(v >> 8), bits: int(uint8(v))})
		}
	}
	return dst, true
}

// SDO abort codes of PDO mapping and assignment writes (ETG.1000.6).
const (
	abortSubIndex0NotZero = 0x06010003 // a sub-index written while sub-index 0 is not 0
	abortNotMappable      = 0x06040041 // object cannot be mapped to the PDO
	abortPDOLength        = 0x06040042 // the mapped objects would exceed the PDO length
)

// PDO mapping and assignment object ranges.
const (
	rxMappingFirst = 0x1600
	rxMappingLast  = 0x17FF
	txMappingFirst = 0x1A00
	txMappingLast  = 0x1BFF
	assignFirst    = 0x1C10
	assignLast     = 0x1C2F
)

// pdoWriteAbort checks a write of data to index:sub, which the mailbox has
// found writable, against the rules for PDO mapping (0x16xx, 0x1Axx) and
// assignment (0x1C10+n) objects and returns the abort code, or 0 to
// accept it (other objects are always accepted):
//
//   - a sub-index other than 0 may change only while sub-index 0 is 0;
//   - a mapping entry must map an object that a PDO of the same direction
//     in the SII maps, with its bit length (or be a gap of 1 bit or more);
//   - an assignment entry must name a mapping object of the SyncManager's
//     direction, or be 0 (nothing);
//   - setting sub-index 0 of either must leave the PDOs (of the
//     SyncManager, for an assignment) within the SyncManager's area:
//     the memory up to the next SyncManager or the end of the process RAM,
//     a third of it in 3-buffer mode.
func (d *Device) pdoWriteAbort(od *objectDictionary, index uint16, sub uint8, data []byte) uint32 {
	kind := pdoObjectKind(index)
	o := od.find(index)
	if kind == notPDOObject || o == nil || len(o.entries) == 0 || len(data) == 0 {
		return 0
	}
	if sub != 0 {
		if o.entries[0].value[0] != 0 {
			return abortSubIndex0NotZero
		}
		return d.pdoEntryAbort(od, index, kind, data)
	}
	n := int(data[0])
	values := make([][]byte, 0, n)
	for k := 1; k <= n && k < len(o.entries); k++ {
		values = append(values, o.entries[k].value)
	}
	return d.pdoLengthAbort(od, index, kind, values)
}

// pdoCompleteWriteAbort checks a complete access write of PDO mapping or
// assignment object index (other objects are always accepted) that sets
// sub-index 0 to n and sub-indexes 1..n to data, their values one after
// the other; the rules are those of pdoWriteAbort.
func (d *Device) pdoCompleteWriteAbort(od *objectDictionary, index uint16, n int, data []byte) uint32 {
	kind := pdoObjectKind(index)
	if kind == notPDOObject {
		return 0
	}
	size := 4
	if kind == assignmentObject {
		size = 2
	}
	if len(data) < n*size {
		return abortLengthLow
	}
	values := make([][]byte, 0, n)
	for k := range n {
		v := data[k*size : (k+1)*size]
		if code := d.pdoEntryAbort(od, index, kind, v); code != 0 {
			return code
		}
		values = append(values, v)
	}
	return d.pdoLengthAbort(od, index, kind, values)
}

// Kinds of PDO object.
const (
	notPDOObject = iota
	rxMappingObject
	txMappingObject
	assignmentObject
)

func pdoObjectKind(index uint16) int {
	switch {
	case index >= rxMappingFirst && index <= rxMappingLast:
		return rxMappingObject
	case index >= txMappingFirst && index <= txMappingLast:
		return txMappingObject
	case index >= assignFirst && index <= assignLast:
		return assignmentObject
	}
	return notPDOObject
}

// pdoEntryAbort checks one new entry value v of PDO object index.
func (d *Device) pdoEntryAbort(od *objectDictionary, index uint16, kind int, v []byte) uint32 {
	if kind != assignmentObject {
		if len(v) < 4 || !d.mappable(kind == rxMappingObject, decodeMapping(binary.LittleEndian.Uint32(v))) {
			return abortNotMappable
		}
		return 0
	}
	sm := int(index - assignFirst)
	if sm >= len(d.sii.SyncManagers) || !d.sii.SyncManagers[sm].Type.IsProcessData() || len(v) < 2 {
		return abortValueRange
	}
	pdo := binary.LittleEndian.Uint16(v)
	if pdo == 0 {
		return 0 // an empty entry assigns nothing
	}
	first, last := uint16(txMappingFirst), uint16(txMappingLast)
	if d.sii.SyncManagers[sm].Type == sii.SMProcessDataOut {
		first, last = rxMappingFirst, rxMappingLast
	}
	if pdo < first || pdo > last {
		return abortValueRange
	}
	if od.find(pdo) == nil {
		return abortNoObject
	}
	return 0
}

// pdoLengthAbort checks that the entries values of PDO object index (the
// first sub-0 count of them) fit the SyncManager's area.
func (d *Device) pdoLengthAbort(od *objectDictionary, index uint16, kind int, values [][]byte) uint32 {
	bits := 0
	sm := int(index - assignFirst)
	if kind == assignmentObject {
		for _, v := range values {
			bits += od.mappedBits(binary.LittleEndian.Uint16(v))
		}
	} else {
		for _, v := range values {
			e := decodeMapping(binary.LittleEndian.Uint32(v))
			if e.bits == 0 {
				return abortNotMappable
			}
			bits += e.bits
		}
		sm = d.firstSM(kind == rxMappingObject)
	}
	if sm < 0 || sm >= len(d.sii.SyncManagers) || bits > 8*d.pdoAreaBytes(sm) {
		return abortPDOLength
	}
	return 0
}

// decodeMapping splits a mapping entry: index<<16 | sub<<8 | bits.
func decodeMapping(v uint32) pdEntry {
	return pdEntry{index: uint16(v >> 16), sub: uint8(v >> 8), bits: int(uint8(v))}
}

// mappable reports whether e may be mapped into an RxPDO (rx) or a TxPDO:
// a gap of 1 bit or more, or an object a PDO of that direction in the SII
// maps, with the same bit length.
func (d *Device) mappable(rx bool, e pdEntry) bool {
	if e.index == 0 {
		return e.bits > 0
	}
	pdos := d.sii.TxPDOs
	if rx {
		pdos = d.sii.RxPDOs
	}
	for _, p := range pdos {
		for _, s := range p.Entries {
			if s.Index == e.index && s.SubIndex == e.sub {
				return int(s.BitLength) == e.bits
			}
		}
	}
	return false
}

// mappedBits returns the length of PDO index as its mapping object maps
// it now, 0 when there is no such object.
func (od *objectDictionary) mappedBits(index uint16) int {
	p := od.find(index)
	if p == nil || len(p.entries) == 0 {
		return 0
	}
	bits := 0
	for j := 1; j <= int(p.entries[0].value[0]) && j < len(p.entries); j++ {
		if len(p.entries[j].value) >= 4 {
			bits += int(p.entries[j].value[0])
		}
	}
	return bits
}

// firstSM returns the index of the device's first process-data output
// (out) or input SyncManager in the SII, or -1.
func (d *Device) firstSM(out bool) int {
	want := sii.SMProcessDataIn
	if out {
		want = sii.SMProcessDataOut
	}
	for i, sm := range d.sii.SyncManagers {
		if sm.Type == want {
			return i
		}
	}
	return -1
}

// pdoAreaBytes returns the most bytes SII SyncManager sm's process data
// may take: from its start to the next SyncManager's start or the end of
// the process RAM, a third of that in 3-buffer mode.
func (d *Device) pdoAreaBytes(sm int) int {
	start := int(d.sii.SyncManagers[sm].StartAddress)
	end := d.mem.ramEnd
	for _, o := range d.sii.SyncManagers {
		if st := int(o.StartAddress); st > start && st < end {
			end = st
		}
	}
	n := max(end-start, 0)
	if d.sii.SyncManagers[sm].Control&esc.SMModeMask == esc.SMModeBuffered {
		n /= 3
	}
	return n
}

func u16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func threeDigits(n int) string {
	return string([]byte{byte('0' + n/100%10), byte('0' + n/10%10), byte('0' + n%10)})
}

package sim

import (
	"encoding/binary"
	"sort"

	"github.com/ecagent/ecagent/master/sii"
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

// entry is one sub-index of an object. Process data entries have no value
// of their own: they read the bits of the process image they map.
type entry struct {
	sub      uint8
	name     string
	dataType uint16
	bits     int
	value    []byte
	access   uint8 // readOnly, writablePreOp or writableAlways
	// process marks an entry that PDOs map: it has no value of its own
	// and reads its bits where the current PDO assignment puts them.
	process bool
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
			name, _ := desc.StringAt(p.NameIndex)
			o := object{index: p.Index, name: name, code: codeRecord,
				entries: []entry{{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{uint8(len(p.Entries))}}}}
			for k, e := range p.Entries {
				v := uint32(e.Index)<<16 | uint32(e.SubIndex)<<8 | uint32(e.BitLength)
				o.entries = append(o.entries, entry{sub: uint8(k + 1), name: "SubIndex " + threeDigits(k+1),
					dataType: typeUint32, bits: 32, value: u32(v)})
			}
			od.add(o)
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

func u16(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

func threeDigits(n int) string {
	return string([]byte{byte('0' + n/100%10), byte('0' + n/10%10), byte('0' + n%10)})
}

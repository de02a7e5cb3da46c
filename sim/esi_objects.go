package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esi"
)

// esiDictionary puts an ESI's object dictionary into a simulated device's:
// every object the description gives, with its names, data types, default
// values and access rights per state, replaces the one derived from the
// SII. Two kinds stay as the SII derives them, because the simulator's
// process data follows them: the PDO mapping and assignment objects
// (0x1600–0x1BFF, 0x1C10–0x1C2F) with the sync manager types 0x1C00, and
// the identity 0x1018 (the SII's, serial number included); they take the
// description's names and access rights. Entries that PDOs map keep
// reading and writing the process image.
type esiDictionary struct {
	dict *esi.Dictionary
}

// keepsDerived reports whether object index stays as the SII derives it.
func keepsDerived(index uint16) bool {
	return index == 0x1018 || index == 0x1C00 ||
		index >= rxMappingFirst && index <= txMappingLast || index >= assignFirst && index <= assignLast
}

// check returns what of the dictionary the device cannot serve.
func (x esiDictionary) check() []string {
	var notes []string
	for i := range x.dict.Objects {
		o := &x.dict.Objects[i]
		if o.Kind == esi.KindUnknown || len(o.Entries) == 0 {
			notes = append(notes, fmt.Sprintf("object %#04x %q is not served: its data type %q could not be resolved", o.Index, o.Name.String(), o.Type))
		}
	}
	return notes
}

// apply adds the dictionary's objects to od.
func (x esiDictionary) apply(od *objectDictionary) {
	for i := range x.dict.Objects {
		o := &x.dict.Objects[i]
		if o.Kind == esi.KindUnknown || len(o.Entries) == 0 {
			continue
		}
		have := od.find(o.Index)
		if have != nil && keepsDerived(o.Index) {
			have.name = o.Name.String()
			for k := range o.Entries {
				if e := have.entry(o.Entries[k].SubIndex); e != nil {
					e.name = o.Entries[k].Name
					e.rights = rightsOf(o.Entries[k].Flags)
					e.access = accessOf(e.rights)
				}
			}
			continue
		}
		od.add(x.object(o, have))
	}
}

// object converts o; have is the object the SII derived at its index, if
// any, whose process data entries stay process data.
func (x esiDictionary) object(o *esi.Object, have *object) object {
	out := object{index: o.Index, name: o.Name.String(), code: codeVar}
	switch o.Kind {
	case esi.KindArray:
		out.code = codeArray
	case esi.KindRecord:
		out.code = codeRecord
	}
	for k := range o.Entries {
		e := &o.Entries[k]
		n := entry{sub: e.SubIndex, name: e.Name, dataType: entryType(e), bits: int(e.BitSize), rights: rightsOf(e.Flags)}
		n.access = accessOf(n.rights)
		n.value = make([]byte, (n.bits+7)/8)
		copy(n.value, e.Default)
		if n.dataType == typeVisibleString && e.Default != nil {
			n.value = append([]byte(nil), e.Default...)
		}
		if have != nil {
			if h := have.entry(e.SubIndex); h != nil && h.process {
				n.process = true
			}
		}
		out.entries = append(out.entries, n)
	}
	if have != nil { // process data the SII maps but the object does not list
		for _, h := range have.entries {
			if h.process && out.entry(h.sub) == nil {
				out.entries = append(out.entries, h)
			}
		}
	}
	sort.SliceStable(out.entries, func(a, b int) bool { return out.entries[a].sub < out.entries[b].sub })
	if out.code != codeVar && (out.entries[0].sub != 0 || len(out.entries[0].value) == 0) {
		// The simulator reads an array's or record's subindex 0 as its
		// count: give it one where the description does not.
		last := out.entries[len(out.entries)-1].sub
		out.entries = append([]entry{{sub: 0, name: "SubIndex 000", dataType: typeUint8, bits: 8, value: []byte{last}}}, out.entries...)
	}
	return out
}

// entryType returns the CoE data type index of an entry: its base type's;
// 0 when it has none (a structure the SDO information shows as such).
func entryType(e *esi.Entry) uint16 {
	for _, n := range []string{e.DataType, e.BaseType} {
		if t, ok := coe.TypeByName(n); ok {
			return uint16(t)
		}
	}
	return 0
}

// rightsOf converts an ESI's access rights, read and write restrictions,
// PDO mapping and backup/setting flags into the SDO information's access
// word.
func rightsOf(f esi.Flags) coe.Access {
	var a coe.Access
	read, write := f.Access == esi.AccessRO || f.Access == esi.AccessRW || f.Access == esi.AccessUnspecified, f.Access == esi.AccessRW || f.Access == esi.AccessWO
	if read {
		a |= states(f.ReadRestrictions, coe.AccessReadPreOp, coe.AccessReadSafeOp, coe.AccessReadOp)
	}
	if write {
		a |= states(f.WriteRestrictions, coe.AccessWritePreOp, coe.AccessWriteSafeOp, coe.AccessWriteOp)
	}
	switch f.PDOMapping {
	case esi.MapRx:
		a |= coe.AccessRxPDO
	case esi.MapTx:
		a |= coe.AccessTxPDO
	case esi.MapRxTx:
		a |= coe.AccessRxPDO | coe.AccessTxPDO
	}
	if f.Backup {
		a |= coe.AccessBackup
	}
	if f.Setting {
		a |= coe.AccessSettings
	}
	return a
}

// states returns the bits of the states a restriction (PreOp, PreOp_SafeOp,
// SafeOp_OP, …) names; all three without one.
func states(restriction string, preop, safeop, op coe.Access) coe.Access {
	if strings.TrimSpace(restriction) == "" {
		return preop | safeop | op
	}
	var a coe.Access
	for _, s := range strings.FieldsFunc(restriction, func(r rune) bool { return r == '_' || r == ',' || r == ' ' }) {
		switch strings.ToUpper(s) {
		case "PREOP":
			a |= preop
		case "SAFEOP":
			a |= safeop
		case "OP":
			a |= op
		}
	}
	return a
}

// accessOf returns the simulator's write access for rights.
func accessOf(rights coe.Access) uint8 {
	switch w := rights & coe.AccessWrite; {
	case w == 0:
		return readOnly
	case w == coe.AccessWritePreOp:
		return writablePreOp
	}
	return writableAlways
}

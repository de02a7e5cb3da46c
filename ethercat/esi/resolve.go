package esi

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// resolver lays an object's subindexes out through the dictionary's data
// types, as a configuration tool shows them and a device serves them:
//
//   - a base type, an alias or an enumeration: a VAR, subindex 0;
//   - a record type (SubItems): one entry per SubItem; a SubItem without
//     SubIdx stands for an array type's elements, numbered on from the
//     one before (0x1C12's "Elements" after "SubIndex 000"), named
//     "SubIndex 001"…; a record of subindex 0 and one such array is an
//     ARRAY;
//   - an array type used as the object's type itself: subindex 0, the
//     element count as a USINT (CiA 301), then the elements.
//
// Defaults come from the object's Info: for a VAR its own, for the others
// the Info SubItem of the same name ("SubIndex 00n" for array elements).
// An entry's flags are its SubItem's where the type gives any, else the
// object's.
type resolver struct {
	types map[string]*DataType
}

func newResolver(d *Dictionary) *resolver {
	m := make(map[string]*DataType, len(d.DataTypes))
	for i := range d.DataTypes {
		if _, dup := m[d.DataTypes[i].Name]; !dup {
			m[d.DataTypes[i].Name] = &d.DataTypes[i]
		}
	}
	return &resolver{types: m}
}

// resolve fills o.Kind and o.Entries and returns what it could not
// resolve, one message per problem.
func (r *resolver) resolve(o *Object) []string {
	t := r.types[o.Type]
	switch {
	case t != nil && len(t.SubItems) > 0:
		return r.record(o, t)
	case t != nil && len(t.Arrays) > 0:
		o.Kind = KindArray
		n := elements(t)
		o.Entries = []Entry{{Name: "SubIndex 000", DataType: "USINT", BaseType: "USINT", BitSize: 8,
			Flags: Flags{Access: AccessRO}, Default: []byte{byte(min(n, 255))}}}
		probs := r.elements(o, t, 1, 16, Flags{})
		return append(probs, r.defaults(o)...)
	case t == nil && !isBaseType(o.Type):
		return []string{fmt.Sprintf("object %#04x: type %q is neither declared in DataTypes nor a base type: its subindexes are not known", o.Index, o.Type)}
	}
	o.Kind = KindVar
	e := r.entry(0, o.Name.String(), o.Type, o.BitSize, 0, Flags{}, o.Flags)
	d, err := defaultOf(e, o.Info)
	e.Default = d
	o.Entries = []Entry{e}
	if err != nil {
		return []string{fmt.Sprintf("object %#04x: %v; it has no default", o.Index, err)}
	}
	return nil
}

// record lays out an object of a record type.
func (r *resolver) record(o *Object, t *DataType) []string {
	var probs []string
	o.Kind = KindRecord
	next := 0
	for _, si := range t.SubItems {
		if si.HasSubIdx {
			o.Entries = append(o.Entries, r.entry(si.SubIdx, si.Name, si.Type, si.BitSize, si.BitOffs, si.Flags, o.Flags))
			next = int(si.SubIdx) + 1
			continue
		}
		at := r.types[si.Type]
		if at == nil || len(at.Arrays) == 0 {
			probs = append(probs, fmt.Sprintf("object %#04x: member %q of %s has no SubIdx and its type %q is not an array type: left out",
				o.Index, si.Name, t.Name, si.Type))
			continue
		}
		if len(t.SubItems) == 2 && t.SubItems[0].HasSubIdx && t.SubItems[0].SubIdx == 0 {
			o.Kind = KindArray
		}
		probs = append(probs, r.elements(o, at, next, si.BitOffs, si.Flags)...)
		if n := len(o.Entries); n > 0 { // an array of no elements adds none
			next = int(o.Entries[n-1].SubIndex) + 1
		}
	}
	return append(probs, r.defaults(o)...)
}

// elements appends the elements of array type at, from subindex first (or
// the array's lower bound if higher), at bit offset offs.
func (r *resolver) elements(o *Object, at *DataType, first int, offs uint32, flags Flags) []string {
	n := elements(at)
	bits := r.bits(at.BaseType)
	if bits == 0 && n > 0 {
		bits = at.BitSize / uint32(n)
	}
	if len(at.Arrays) == 1 && int(at.Arrays[0].LBound) > first {
		first = int(at.Arrays[0].LBound)
	}
	var probs []string
	if first+n-1 > 255 {
		probs = append(probs, fmt.Sprintf("object %#04x: array %s of %d elements passes subindex 255: cut there", o.Index, at.Name, n))
		n = 256 - first
	}
	for i := range n {
		sub := first + i
		o.Entries = append(o.Entries, r.entry(uint8(sub), fmt.Sprintf("SubIndex %03d", sub), at.BaseType,
			bits, offs+uint32(i)*bits, flags, o.Flags))
	}
	return probs
}

// elements is the element count of an array type, all dimensions.
func elements(t *DataType) int {
	n := 1
	for _, a := range t.Arrays {
		n *= int(min(a.Elements, 256))
	}
	return min(n, 256)
}

// entry makes one entry; own flags win over the object's when given.
func (r *resolver) entry(sub uint8, name, typ string, bits, offs uint32, own, obj Flags) Entry {
	f := own
	if f == (Flags{}) {
		f = obj
	}
	return Entry{SubIndex: sub, Name: name, DataType: typ, BaseType: r.base(typ), BitSize: bits, BitOffs: offs, Flags: f}
}

// defaults takes each entry's default from the Info SubItem of its name.
func (r *resolver) defaults(o *Object) []string {
	subs := o.Info.SubItems
	used := make([]bool, len(subs))
	var probs []string
	for i := range o.Entries {
		e := &o.Entries[i]
		k := infoFor(subs, used, e)
		if k < 0 {
			continue
		}
		used[k] = true
		d, err := defaultOf(*e, subs[k].Info)
		if err != nil {
			probs = append(probs, fmt.Sprintf("object %#04x:%02x: %v; it has no default", o.Index, e.SubIndex, err))
		}
		e.Default = d
	}
	for k, u := range used {
		if !u {
			probs = append(probs, fmt.Sprintf("object %#04x: Info/SubItem %q matches no subindex of type %s: its default is not used",
				o.Index, subs[k].Name, o.Type))
		}
	}
	return probs
}

// infoFor finds the unused Info SubItem of e's name, or of its
// "SubIndex 00n" name; -1 when there is none.
func infoFor(subs []InfoSubItem, used []bool, e *Entry) int {
	alt := fmt.Sprintf("SubIndex %03d", e.SubIndex)
	for _, name := range []string{e.Name, alt} {
		for k := range subs {
			if !used[k] && subs[k].Name == name {
				return k
			}
		}
	}
	return -1
}

// base follows aliases and enumerations to the type a value is stored as.
func (r *resolver) base(name string) string {
	for range 8 {
		t := r.types[name]
		if t == nil || t.BaseType == "" || len(t.SubItems) > 0 || len(t.Arrays) > 0 {
			return name
		}
		name = t.BaseType
	}
	return name
}

// bits is the size of a type, declared or base; 0 when unknown.
func (r *resolver) bits(name string) uint32 {
	if t := r.types[name]; t != nil {
		return t.BitSize
	}
	n, _ := baseBits(name)
	return n
}

// defaultOf returns the default an Info gives an entry: DefaultData as
// is, DefaultValue as a little-endian number of the entry's size,
// DefaultString as its bytes; nil when it gives none.
func defaultOf(e Entry, in ObjectInfo) ([]byte, error) {
	switch {
	case in.DefaultData != nil:
		return in.DefaultData, nil
	case in.DefaultValue != "":
		b, err := numberBytes(in.DefaultValue, e.BitSize, e.BaseType)
		if err != nil {
			return nil, fmt.Errorf("DefaultValue %q: %w", in.DefaultValue, err)
		}
		return b, nil
	case in.DefaultString != "":
		return []byte(in.DefaultString), nil
	}
	return nil, nil
}

// numberBytes encodes a DefaultValue as the bytes of a bits-wide value: a
// float for REAL and LREAL written as a decimal, else an integer (a
// negative one as its two's complement).
func numberBytes(s string, bits uint32, base string) ([]byte, error) {
	if bits == 0 || bits > 64 {
		return nil, fmt.Errorf("a number for a %d-bit value", bits)
	}
	n := int((bits + 7) / 8)
	hexForm := strings.Contains(strings.ToLower(s), "x")
	var v uint64
	switch b := strings.ToUpper(base); {
	case (b == "REAL" || b == "REAL32") && bits == 32 && !hexForm:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
		if err != nil {
			return nil, fmt.Errorf("not a REAL")
		}
		v = uint64(math.Float32bits(float32(f)))
	case (b == "LREAL" || b == "REAL64") && bits == 64 && !hexForm:
		f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return nil, fmt.Errorf("not an LREAL")
		}
		v = math.Float64bits(f)
	default:
		var err error
		if v, err = etgxml.ParseUint(s, uint64(1)<<bits-1, true); err != nil { // 1<<64 is 0: all ones

			return nil, fmt.Errorf("%v for %d bits", err, bits)
		}
	}
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(v >> (8 * i))
	}
	return out, nil
}

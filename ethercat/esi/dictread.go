package esi

import (
	"strings"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// readProfile reads one Profile element.
func readProfile(x *etgxml.Errors, e *etgxml.Element, w *etgxml.Warnings, file string) Profile {
	p := Profile{
		ProfileNo: etgxml.Uint[uint32](x, e.Child("ProfileNo")),
		AddInfo:   etgxml.Uint[uint32](x, e.Child("AddInfo")),
	}
	for _, c := range e.Children("ChannelInfo") {
		p.Channels = append(p.Channels, Channel{
			ProfileNo: etgxml.Uint[uint32](x, etgxml.Need(x, c, "ProfileNo")),
			AddInfo:   etgxml.Uint[uint32](x, c.Child("AddInfo")),
		})
	}
	if d := e.Child("Dictionary"); d != nil {
		p.Dictionary = readDictionary(x, d, w, file)
	}
	return p
}

// readDictionary reads a Dictionary element and resolves its objects'
// subindexes; what cannot be resolved is warned about on w.
func readDictionary(x *etgxml.Errors, e *etgxml.Element, w *etgxml.Warnings, file string) *Dictionary {
	d := &Dictionary{}
	for _, t := range e.Child("DataTypes").Children("DataType") {
		d.DataTypes = append(d.DataTypes, readDataType(x, t))
	}
	objs := e.Child("Objects").Children("Object")
	d.Objects = make([]Object, 0, len(objs))
	for _, o := range objs {
		d.Objects = append(d.Objects, readObject(x, o))
	}
	if x.Len() > 0 {
		return d // resolving bad values would only add noise
	}
	r := newResolver(d)
	for i, o := range objs {
		for _, msg := range r.resolve(&d.Objects[i]) {
			w.Add(file, o.Line, o.Pattern(), msg)
		}
	}
	return d
}

// readDataType reads one DataType element.
func readDataType(x *etgxml.Errors, e *etgxml.Element) DataType {
	t := DataType{Line: e.Line,
		Name:     etgxml.Need(x, e, "Name").Text(),
		BaseType: e.Child("BaseType").Text(),
		BitSize:  etgxml.Uint[uint32](x, etgxml.Need(x, e, "BitSize")),
	}
	for _, a := range e.Children("ArrayInfo") {
		t.Arrays = append(t.Arrays, ArrayInfo{
			LBound:   etgxml.Uint[uint32](x, etgxml.Need(x, a, "LBound")),
			Elements: etgxml.Uint[uint32](x, etgxml.Need(x, a, "Elements")),
		})
	}
	for _, s := range e.Children("SubItem") {
		t.SubItems = append(t.SubItems, readSubItem(x, s))
	}
	for _, en := range e.Children("EnumInfo") {
		t.Enums = append(t.Enums, Enum{
			Value: etgxml.Int[int64](x, etgxml.Need(x, en, "Enum")),
			Text:  readTexts(x, en.Children("Text")),
		})
	}
	return t
}

// readSubItem reads one SubItem of a DataType.
func readSubItem(x *etgxml.Errors, e *etgxml.Element) SubItem {
	s := SubItem{
		Name:    etgxml.Need(x, e, "Name").Text(),
		Type:    etgxml.Need(x, e, "Type").Text(),
		BitSize: etgxml.Uint[uint32](x, etgxml.Need(x, e, "BitSize")),
		BitOffs: etgxml.Uint[uint32](x, etgxml.Need(x, e, "BitOffs")),
		Flags:   readFlags(x, e.Child("Flags")),
	}
	if si := e.Child("SubIdx"); si != nil {
		s.SubIdx, s.HasSubIdx = etgxml.Uint[uint8](x, si), true
	}
	return s
}

// readObject reads one Object element.
func readObject(x *etgxml.Errors, e *etgxml.Element) Object {
	o := Object{Line: e.Line,
		Index:   etgxml.Uint[uint16](x, etgxml.Need(x, e, "Index")),
		Name:    readTexts(x, e.Children("Name")),
		Type:    etgxml.Need(x, e, "Type").Text(),
		BitSize: etgxml.Uint[uint32](x, etgxml.Need(x, e, "BitSize")),
		Flags:   readFlags(x, e.Child("Flags")),
	}
	if len(o.Name) == 0 {
		x.At(e, "", "", ErrMissing, "required <Name> missing")
	}
	if info := e.Child("Info"); info != nil {
		o.Info = readObjectInfo(x, info)
	}
	return o
}

// readObjectInfo reads the Info of an object or subitem.
func readObjectInfo(x *etgxml.Errors, e *etgxml.Element) ObjectInfo {
	in := ObjectInfo{
		DefaultData:   etgxml.Hex(x, e.Child("DefaultData")),
		MinData:       etgxml.Hex(x, e.Child("MinData")),
		MaxData:       etgxml.Hex(x, e.Child("MaxData")),
		DefaultValue:  e.Child("DefaultValue").Text(),
		MinValue:      e.Child("MinValue").Text(),
		MaxValue:      e.Child("MaxValue").Text(),
		DefaultString: e.Child("DefaultString").RawText(),
		Unit:          etgxml.Uint[uint32](x, e.Child("Unit")),
	}
	for _, s := range e.Children("SubItem") {
		sub := InfoSubItem{Name: etgxml.Need(x, s, "Name").Text()}
		if i := s.Child("Info"); i != nil {
			sub.Info = readObjectInfo(x, i)
		}
		in.SubItems = append(in.SubItems, sub)
	}
	return in
}

// readFlags reads a Flags element.
func readFlags(x *etgxml.Errors, e *etgxml.Element) Flags {
	if e == nil {
		return Flags{}
	}
	f := Flags{
		Category:      e.Child("Category").Text(),
		SafetyMapping: e.Child("SafetyMapping").Text(),
		Backup:        etgxml.Uint[uint8](x, e.Child("Backup")) != 0,
		Setting:       etgxml.Uint[uint8](x, e.Child("Setting")) != 0,
	}
	if a := e.Child("Access"); a != nil {
		switch etgxml.OneOf(x, a, "ro", "rw", "wo") {
		case "ro":
			f.Access = AccessRO
		case "rw":
			f.Access = AccessRW
		case "wo":
			f.Access = AccessWO
		}
		f.ReadRestrictions, _ = a.Attr("ReadRestrictions")
		f.WriteRestrictions, _ = a.Attr("WriteRestrictions")
	}
	if m := e.Child("PdoMapping"); m != nil && m.Text() != "" {
		switch strings.ToUpper(etgxml.OneOf(x, m, "R", "T", "RT", "TR")) {
		case "R":
			f.PDOMapping = MapRx
		case "T":
			f.PDOMapping = MapTx
		case "RT", "TR":
			f.PDOMapping = MapRxTx
		}
	}
	return f
}

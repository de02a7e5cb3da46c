package esi

import (
	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// The conversions from elements to types. Each reads what it knows and
// marks it consumed; the caller reports the rest as warnings.

// readTexts reads localised texts (Name elements with LcId).
func readTexts(x *etgxml.Errors, es []*etgxml.Element) Texts {
	if len(es) == 0 {
		return nil
	}
	out := make(Texts, 0, len(es))
	for _, e := range es {
		id, _ := etgxml.UintAttr[uint16](x, e, "LcId")
		out = append(out, Text{LcID: int(id), Value: e.Text()})
	}
	return out
}

// readVendor reads the Vendor element.
func readVendor(x *etgxml.Errors, e *etgxml.Element) Vendor {
	return Vendor{
		ID:             etgxml.Bits[uint32](x, etgxml.Need(x, e, "Id")),
		Name:           readTexts(x, e.Children("Name")),
		ImageData16x14: etgxml.Hex(x, e.Child("ImageData16x14")),
	}
}

// readGroup reads one Group element.
func readGroup(x *etgxml.Errors, e *etgxml.Element) Group {
	g := Group{
		Type:           etgxml.Need(x, e, "Type").Text(),
		Name:           readTexts(x, e.Children("Name")),
		ImageData16x14: etgxml.Hex(x, e.Child("ImageData16x14")),
	}
	g.ParentGroup, _ = e.Attr("ParentGroup")
	g.SortOrder, _ = etgxml.IntAttr[int32](x, e, "SortOrder")
	return g
}

// readDevice reads one Device element; it labels e with the order code,
// so that errors and warnings inside it name the device.
func readDevice(x *etgxml.Errors, e *etgxml.Element, w *etgxml.Warnings, file string) Device {
	d := Device{Line: e.Line}
	d.Physics, _ = e.Attr("Physics")
	d.Invisible = etgxml.BoolAttr(x, e, "Invisible")
	t := etgxml.Need(x, e, "Type")
	e.Label = t.Text() // before anything can fail, so errors name the device
	readType(x, t, &d)
	d.Name = readTexts(x, e.Children("Name"))
	d.GroupType = e.Child("GroupType").Text()
	d.Info = readInfo(x, e.Child("Info"))
	for _, p := range e.Children("Profile") {
		d.Profiles = append(d.Profiles, readProfile(x, p, w, file))
	}
	for _, f := range e.Children("Fmmu") {
		d.FMMUs = append(d.FMMUs, readFMMU(x, f))
	}
	for _, s := range e.Children("Sm") {
		d.SyncManagers = append(d.SyncManagers, readSM(x, s))
	}
	d.RxPDOs = readPDOs(x, e.Children("RxPdo"))
	d.TxPDOs = readPDOs(x, e.Children("TxPdo"))
	if m := e.Child("Mailbox"); m != nil {
		d.Mailbox = readMailbox(x, m)
	}
	if dc := e.Child("Dc"); dc != nil {
		d.DC = readDC(x, dc)
	}
	if ee := e.Child("Eeprom"); ee != nil {
		d.EEPROM = readEEPROM(x, ee)
	}
	d.Image16x14 = e.Child("Image16x14").Text()
	d.ImageData16x14 = etgxml.Hex(x, e.Child("ImageData16x14"))
	return d
}

// readType reads the Type element: order code, product code, revision.
func readType(x *etgxml.Errors, e *etgxml.Element, d *Device) {
	if e == nil {
		return
	}
	d.Type = e.Text()
	var ok bool
	if d.ProductCode, ok = etgxml.BitsAttr[uint32](x, e, "ProductCode"); !ok {
		x.At(e, "ProductCode", "", ErrMissing, "required attribute ProductCode missing: a device is known by it")
	}
	if d.RevisionNo, ok = etgxml.BitsAttr[uint32](x, e, "RevisionNo"); !ok {
		x.At(e, "RevisionNo", "", ErrMissing, "required attribute RevisionNo missing: a device is known by it")
	}
	d.CheckRevisionNo, _ = e.Attr("CheckRevisionNo")
}

// readInfo reads what a master needs of Device/Info.
func readInfo(x *etgxml.Errors, e *etgxml.Element) Info {
	if e == nil {
		return Info{}
	}
	u32 := func(e *etgxml.Element) uint32 { return etgxml.Uint[uint32](x, e) }
	sm := e.Child("StateMachine").Child("Timeout")
	mb := e.Child("Mailbox").Child("Timeout")
	return Info{
		EBusCurrent:            etgxml.Int[int32](x, e.Child("Electrical").Child("EBusCurrent")),
		IdentificationAdo:      etgxml.Uint[uint16](x, e.Child("IdentificationAdo")),
		IdentificationReg:      etgxml.Bool(x, e.Child("IdentificationReg134")),
		PreopTimeout:           u32(sm.Child("PreopTimeout")),
		SafeopOpTimeout:        u32(sm.Child("SafeopOpTimeout")),
		BackToInitTimeout:      u32(sm.Child("BackToInitTimeout")),
		BackToSafeopTimeout:    u32(sm.Child("BackToSafeopTimeout")),
		MailboxRequestTimeout:  u32(mb.Child("RequestTimeout")),
		MailboxResponseTimeout: u32(mb.Child("ResponseTimeout")),
	}
}

// readSM reads one Sm element.
func readSM(x *etgxml.Errors, e *etgxml.Element) SyncManager {
	s := SyncManager{Type: readSMType(x, e)}
	var ok bool
	if s.StartAddress, ok = etgxml.UintAttr[uint16](x, e, "StartAddress"); !ok && s.Type != SMUnused {
		x.At(e, "StartAddress", "", ErrMissing, "required attribute StartAddress missing for a %s sync manager", s.Type)
	}
	s.DefaultSize, _ = etgxml.UintAttr[uint16](x, e, "DefaultSize")
	s.MinSize, _ = etgxml.UintAttr[uint16](x, e, "MinSize")
	s.MaxSize, _ = etgxml.UintAttr[uint16](x, e, "MaxSize")
	s.ControlByte, _ = etgxml.UintAttr[uint8](x, e, "ControlByte")
	s.Enable = readEnable(x, e)
	s.Virtual = etgxml.BoolAttr(x, e, "Virtual")
	s.OpOnly = etgxml.BoolAttr(x, e, "OpOnly")
	return s
}

// readSMType reads an Sm element's text.
func readSMType(x *etgxml.Errors, e *etgxml.Element) SMType {
	if e.Text() == "" {
		return SMUnused
	}
	switch etgxml.OneOf(x, e, "MBoxOut", "MBoxIn", "Outputs", "Inputs") {
	case "MBoxOut":
		return SMMailboxOut
	case "MBoxIn":
		return SMMailboxIn
	case "Outputs":
		return SMOutputs
	case "Inputs":
		return SMInputs
	}
	return SMUnused
}

// readEnable reads Sm@Enable, a number (1) in most files and a boolean in
// some.
func readEnable(x *etgxml.Errors, e *etgxml.Element) bool {
	s, ok := e.Attr("Enable")
	if !ok {
		return false
	}
	if b, err := etgxml.ParseBool(s); err == nil {
		return b
	}
	v, err := etgxml.ParseUint(s, 0xFF, false)
	if err != nil {
		x.At(e, "Enable", s, ErrValue, "allowed: a number (0 or 1) or true/false")
	}
	return v != 0
}

// readFMMU reads one Fmmu element.
func readFMMU(x *etgxml.Errors, e *etgxml.Element) FMMU {
	f := FMMU{SyncManager: NoSyncManager, SyncUnit: -1, OpOnly: etgxml.BoolAttr(x, e, "OpOnly")}
	if e.Text() != "" {
		switch etgxml.OneOf(x, e, "Outputs", "Inputs", "MBoxState", "DynamicInputs", "DynamicOutputs") {
		case "Outputs":
			f.Usage = FMMUOutputs
		case "Inputs":
			f.Usage = FMMUInputs
		case "MBoxState":
			f.Usage = FMMUMailboxState
		case "DynamicInputs":
			f.Usage = FMMUDynamicInputs
		case "DynamicOutputs":
			f.Usage = FMMUDynamicOutputs
		}
	}
	if sm, ok := etgxml.UintAttr[uint8](x, e, "Sm"); ok {
		f.SyncManager = int(sm)
	}
	if su, ok := etgxml.UintAttr[uint8](x, e, "Su"); ok {
		f.SyncUnit = int(su)
	}
	return f
}

// readPDOs reads RxPdo or TxPdo elements.
func readPDOs(x *etgxml.Errors, es []*etgxml.Element) []PDO {
	var out []PDO
	for _, e := range es {
		out = append(out, readPDO(x, e))
	}
	return out
}

// readPDO reads one RxPdo or TxPdo element.
func readPDO(x *etgxml.Errors, e *etgxml.Element) PDO {
	h := etgxml.ReadPDO(x, e)
	p := PDO{Line: e.Line, Index: h.Index, Name: readTexts(x, e.Children("Name")), SyncManager: h.SyncManager,
		SyncUnit: -1, Fixed: h.Fixed, Mandatory: h.Mandatory, Virtual: etgxml.BoolAttr(x, e, "Virtual"), Exclude: h.Exclude}
	if su, ok := etgxml.UintAttr[uint8](x, e, "Su"); ok {
		p.SyncUnit = int(su)
	}
	for _, en := range e.Children("Entry") {
		c := etgxml.ReadPDOEntry(x, en)
		p.Entries = append(p.Entries, PDOEntry{Index: c.Index, SubIndex: c.SubIndex, BitLen: c.BitLen,
			Name: readTexts(x, en.Children("Name")), DataType: c.DataType, Fixed: etgxml.BoolAttr(x, en, "Fixed")})
	}
	return p
}

package esi

import "github.com/ecagent/ecagent/ethercat/internal/etgxml"

// readMailbox reads the Mailbox element.
func readMailbox(x *etgxml.Errors, e *etgxml.Element) *Mailbox {
	m := &Mailbox{
		DataLinkLayer: etgxml.BoolAttr(x, e, "DataLinkLayer"),
		RealTimeMode:  etgxml.BoolAttr(x, e, "RealTimeMode"),
	}
	if c := e.Child("CoE"); c != nil {
		m.Protocols |= ProtocolCoE
		m.CoE = readCoE(x, c)
	}
	if c := e.Child("EoE"); c != nil {
		m.Protocols |= ProtocolEoE
		m.EoE = &EoE{IP: etgxml.BoolAttr(x, c, "IP"), MAC: etgxml.BoolAttr(x, c, "MAC"),
			TimeStamp: etgxml.BoolAttr(x, c, "TimeStamp")}
	}
	if c := e.Child("SoE"); c != nil {
		m.Protocols |= ProtocolSoE
		m.SoE = &SoE{}
		m.SoE.ChannelCount, _ = etgxml.UintAttr[uint8](x, c, "ChannelCount")
	}
	for _, p := range []struct {
		name string
		bit  Protocols
	}{{"FoE", ProtocolFoE}, {"AoE", ProtocolAoE}, {"VoE", ProtocolVoE}} {
		if e.Child(p.name) != nil {
			m.Protocols |= p.bit
		}
	}
	return m
}

// readCoE reads the CoE element of a Mailbox.
func readCoE(x *etgxml.Errors, e *etgxml.Element) *CoE {
	b := func(name string) bool { return etgxml.BoolAttr(x, e, name) }
	c := &CoE{SdoInfo: b("SdoInfo"), PdoAssign: b("PdoAssign"), PdoConfig: b("PdoConfig"),
		PdoUpload: b("PdoUpload"), CompleteAccess: b("CompleteAccess"), SegmentedSdo: b("SegmentedSdo"),
		DiagHistory: b("DiagHistory")}
	for _, ic := range e.Children("InitCmd") {
		cmd := CoEInitCmd{Line: ic.Line,
			Index:          etgxml.Uint[uint16](x, etgxml.Need(x, ic, "Index")),
			SubIndex:       etgxml.Uint[uint8](x, etgxml.Need(x, ic, "SubIndex")),
			Data:           etgxml.Hex(x, ic.Child("Data")),
			Comment:        ic.Child("Comment").Text(),
			CompleteAccess: etgxml.BoolAttr(x, ic, "CompleteAccess"),
			Fixed:          etgxml.BoolAttr(x, ic, "Fixed"),
		}
		cmd.Transitions = etgxml.Transitions(x, ic)
		c.InitCmds = append(c.InitCmds, cmd)
	}
	return c
}

// readDC reads the Dc element.
func readDC(x *etgxml.Errors, e *etgxml.Element) *DC {
	dc := &DC{}
	for _, m := range e.Children("OpMode") {
		op := OpMode{
			Name:           etgxml.Need(x, m, "Name").Text(),
			Desc:           m.Child("Desc").Text(),
			AssignActivate: etgxml.Uint[uint16](x, etgxml.Need(x, m, "AssignActivate")),
			CycleTimeSync0: readSyncTime(x, m.Child("CycleTimeSync0")),
			ShiftTimeSync0: readSyncTime(x, m.Child("ShiftTimeSync0")),
			CycleTimeSync1: readSyncTime(x, m.Child("CycleTimeSync1")),
			ShiftTimeSync1: readSyncTime(x, m.Child("ShiftTimeSync1")),
		}
		for _, s := range m.Children("Sm") {
			no, ok := etgxml.UintAttr[uint8](x, s, "No")
			if !ok {
				x.At(s, "No", "", ErrMissing, "required attribute No missing: the sync manager")
			}
			sm := OpModeSM{No: no}
			for _, p := range s.Children("Pdo") {
				sm.PDOs = append(sm.PDOs, etgxml.Uint[uint16](x, p))
			}
			op.SyncManagers = append(op.SyncManagers, sm)
		}
		dc.OpModes = append(dc.OpModes, op)
	}
	return dc
}

// readSyncTime reads a CycleTimeSync or ShiftTimeSync element.
func readSyncTime(x *etgxml.Errors, e *etgxml.Element) SyncTime {
	if e == nil {
		return SyncTime{}
	}
	t := SyncTime{Value: etgxml.Int[int64](x, e), Input: etgxml.BoolAttr(x, e, "Input")}
	t.Factor, t.HasFactor = etgxml.IntAttr[int32](x, e, "Factor")
	return t
}

// readEEPROM reads the Eeprom element.
func readEEPROM(x *etgxml.Errors, e *etgxml.Element) *EEPROM {
	ee := &EEPROM{
		ByteSize:    etgxml.Uint[uint32](x, e.Child("ByteSize")),
		ConfigData:  etgxml.Hex(x, e.Child("ConfigData")),
		BootStrap:   etgxml.Hex(x, e.Child("BootStrap")),
		Data:        etgxml.Hex(x, e.Child("Data")),
		AssignToPdi: etgxml.BoolAttr(x, e, "AssignToPdi"),
	}
	for _, c := range e.Children("Category") {
		ee.Categories = append(ee.Categories, Category{
			Type: etgxml.Uint[uint16](x, etgxml.Need(x, c, "CatNo")),
			Data: etgxml.Hex(x, c.Child("Data")),
		})
	}
	return ee
}

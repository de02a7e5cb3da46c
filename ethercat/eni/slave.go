package eni

import (
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// readSlave reads one Slave element; it labels e with the slave's name,
// so that errors and warnings inside it name the slave.
func readSlave(x *etgxml.Errors, e *etgxml.Element) Slave {
	info := etgxml.Need(x, e, "Info")
	e.Label = info.Child("Name").Text() // before anything can fail
	s := Slave{Line: e.Line,
		Info:     readSlaveInfo(x, info),
		InitCmds: readInitCmds(x, e.Child("InitCmds")),
	}
	if pd := e.Child("ProcessData"); pd != nil {
		s.ProcessData = readProcessData(x, pd)
	}
	if mb := e.Child("Mailbox"); mb != nil {
		s.Mailbox = readMailbox(x, mb)
	}
	for _, p := range e.Children("PreviousPort") {
		pp := PreviousPort{
			Selected: etgxml.BoolAttr(x, p, "Selected"),
			Port:     etgxml.OneOf(x, etgxml.Need(x, p, "Port"), "A", "B", "C", "D"),
			PhysAddr: optUint[uint16](x, p.Child("PhysAddr")),
		}
		s.PreviousPorts = append(s.PreviousPorts, pp)
	}
	if dc := e.Child("DC"); dc != nil {
		s.DC = &DC{
			PotentialReferenceClock: etgxml.Bool(x, dc.Child("PotentialReferenceClock")),
			ReferenceClock:          etgxml.Bool(x, dc.Child("ReferenceClock")),
			CycleTime0:              optUint[uint32](x, dc.Child("CycleTime0")),
			CycleTime1:              optInt[int32](x, dc.Child("CycleTime1")),
			ShiftTime:               optInt[int32](x, dc.Child("ShiftTime")),
			AssignActivate:          optUint[uint16](x, dc.Child("AssignActivate")),
		}
	}
	return s
}

// readSlaveInfo reads a slave's Info element.
func readSlaveInfo(x *etgxml.Errors, e *etgxml.Element) SlaveInfo {
	i := SlaveInfo{
		Name:            e.Child("Name").Text(),
		PhysAddr:        optUint[uint16](x, e.Child("PhysAddr")),
		AutoIncAddr:     optBits[uint16](x, e.Child("AutoIncAddr")),
		Physics:         e.Child("Physics").Text(),
		VendorID:        etgxml.Bits[uint32](x, etgxml.Need(x, e, "VendorId")),
		ProductCode:     etgxml.Bits[uint32](x, etgxml.Need(x, e, "ProductCode")),
		RevisionNo:      etgxml.Bits[uint32](x, etgxml.Need(x, e, "RevisionNo")),
		SerialNo:        optBits[uint32](x, e.Child("SerialNo")),
		ProductRevision: e.Child("ProductRevision").Text(),
	}
	if id := e.Child("Identification"); id != nil {
		i.Identification = &Identification{Ado: etgxml.Uint[uint16](x, etgxml.Need(x, id, "Ado"))}
		if v, ok := etgxml.UintAttr[uint16](x, id, "Value"); ok {
			i.Identification.Value = v
		} else {
			i.Identification.Value = etgxml.Uint[uint16](x, etgxml.Need(x, id, "Value"))
		}
	}
	return i
}

// readProcessData reads a slave's ProcessData element.
func readProcessData(x *etgxml.Errors, e *etgxml.Element) *ProcessData {
	pd := &ProcessData{
		Send:   readRanges(x, e.Children("Send")),
		Recv:   readRanges(x, e.Children("Recv")),
		RxPDOs: readPDOs(x, e.Children("RxPdo")),
		TxPDOs: readPDOs(x, e.Children("TxPdo")),
	}
	for _, k := range e.Kids {
		if no, ok := smNumber(k.Name); ok {
			k.Use()
			pd.SyncManagers = append(pd.SyncManagers, readSM(x, k, no))
		}
	}
	return pd
}

// smNumber parses the N of an SmN element name, 0…15.
func smNumber(name string) (uint8, bool) {
	n, ok := strings.CutPrefix(name, "Sm")
	if !ok || n == "" {
		return 0, false
	}
	v, err := strconv.ParseUint(n, 10, 8)
	return uint8(v), err == nil && v < 16
}

// readRanges reads Send or Recv elements.
func readRanges(x *etgxml.Errors, es []*etgxml.Element) []BitRange {
	var out []BitRange
	for _, e := range es {
		r := BitRange{
			BitStart:  etgxml.Uint[uint32](x, etgxml.Need(x, e, "BitStart")),
			BitLength: etgxml.Uint[uint32](x, etgxml.Need(x, e, "BitLength")),
		}
		for i := range e.Attrs {
			if no, ok := smNumber(e.Attrs[i].Name); ok && etgxml.BoolAttr(x, e, e.Attrs[i].Name) {
				r.SyncManagers = append(r.SyncManagers, no)
			}
		}
		out = append(out, r)
	}
	return out
}

// readSM reads one SmN element.
func readSM(x *etgxml.Errors, e *etgxml.Element, no uint8) SyncManager {
	sm := SyncManager{No: no,
		Type:         etgxml.OneOf(x, etgxml.Need(x, e, "Type"), "Outputs", "Inputs", "MBoxOut", "MBoxIn"),
		StartAddress: etgxml.Uint[uint16](x, etgxml.Need(x, e, "StartAddress")),
		ControlByte:  etgxml.Uint[uint8](x, etgxml.Need(x, e, "ControlByte")),
		Enable:       readEnable(x, etgxml.Need(x, e, "Enable")),
		DefaultSize:  optUint[uint16](x, e.Child("DefaultSize")),
		MinSize:      optUint[uint16](x, e.Child("MinSize")),
		MaxSize:      optUint[uint16](x, e.Child("MaxSize")),
	}
	for _, p := range e.Children("Pdo") {
		sm.PDOs = append(sm.PDOs, etgxml.Uint[uint16](x, p))
	}
	return sm
}

// readEnable reads an Enable element: a boolean, or a number (1) as some
// tools write it.
func readEnable(x *etgxml.Errors, e *etgxml.Element) bool {
	if e == nil {
		return false
	}
	if b, err := etgxml.ParseBool(e.Text()); err == nil {
		return b
	}
	return etgxml.Uint[uint8](x, e) != 0
}

// readPDOs reads RxPdo or TxPdo elements.
func readPDOs(x *etgxml.Errors, es []*etgxml.Element) []PDO {
	var out []PDO
	for _, e := range es {
		h := etgxml.ReadPDO(x, e)
		p := PDO{Line: e.Line, Index: h.Index, Name: e.Child("Name").Text(), SyncManager: h.SyncManager,
			Fixed: h.Fixed, Mandatory: h.Mandatory, Exclude: h.Exclude}
		for _, en := range e.Children("Entry") {
			c := etgxml.ReadPDOEntry(x, en)
			p.Entries = append(p.Entries, PDOEntry{Index: c.Index, SubIndex: c.SubIndex, BitLen: c.BitLen,
				Name: en.Child("Name").Text(), DataType: c.DataType, Comment: en.Child("Comment").Text()})
		}
		out = append(out, p)
	}
	return out
}

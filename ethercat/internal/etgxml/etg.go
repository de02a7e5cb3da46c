package etgxml

// Transitions reads the Transition children of an init command (ESI CoE
// InitCmd, ENI InitCmd): at least one, each a transition of the EtherCAT
// state machine (ETG.2000, ETG.2100): IP, PI, PS, SP, SO, OS, OP, SI, OI,
// IB, BI, II, PP or SS.
func Transitions(x *Errors, e *Element) []string {
	ts := e.Children("Transition")
	if len(ts) == 0 {
		x.At(e, "", "", ErrMissing, "required <Transition> missing: an init command runs at a transition")
	}
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, OneOf(x, t, "IP", "PI", "PS", "SP", "SO", "OS", "OP", "SI", "OI", "IB", "BI", "II", "PP", "SS"))
	}
	return out
}

// NoSyncManager is the SyncManager of a PDO element without @Sm; the
// esi and eni packages export it under the same name.
const NoSyncManager = -1

// PDO is what an ESI and an ENI say alike of an RxPdo or TxPdo element
// (ETG.2000 PdoType, which ETG.2100 takes over): each package adds its
// own names and attributes.
type PDO struct {
	Index       uint16
	SyncManager int // @Sm, or NoSyncManager
	Fixed       bool
	Mandatory   bool
	Exclude     []uint16
}

// ReadPDO reads the index, @Sm, @Fixed, @Mandatory and the Exclude
// children of the RxPdo or TxPdo element e.
func ReadPDO(x *Errors, e *Element) PDO {
	p := PDO{SyncManager: NoSyncManager,
		Index:     Uint[uint16](x, Need(x, e, "Index")),
		Fixed:     BoolAttr(x, e, "Fixed"),
		Mandatory: BoolAttr(x, e, "Mandatory"),
	}
	if sm, ok := UintAttr[uint8](x, e, "Sm"); ok {
		p.SyncManager = int(sm)
	}
	for _, ex := range e.Children("Exclude") {
		p.Exclude = append(p.Exclude, Uint[uint16](x, ex))
	}
	return p
}

// PDOEntry is what an ESI and an ENI say alike of a PDO's Entry element.
type PDOEntry struct {
	Index    uint16
	SubIndex uint8
	BitLen   uint16
	DataType string // as the file writes it: BOOL, INT, UDINT, ...
}

// ReadPDOEntry reads the Index, SubIndex, BitLen and DataType of the
// Entry element e.
func ReadPDOEntry(x *Errors, e *Element) PDOEntry {
	return PDOEntry{
		Index:    Uint[uint16](x, Need(x, e, "Index")),
		SubIndex: Uint[uint8](x, e.Child("SubIndex")),
		BitLen:   Uint[uint16](x, Need(x, e, "BitLen")),
		DataType: e.Child("DataType").Text(),
	}
}

package sii

import (
	"encoding/binary"
	"fmt"
)

// CategoryType identifies a category (ETG.1000.6 Table 19).
type CategoryType uint16

// Category types. Types 1–9 are device specific and 0x0800–0xFFFE vendor specific.
const (
	CategoryNOP          CategoryType = 0
	CategoryStrings      CategoryType = 10
	CategoryDataTypes    CategoryType = 20
	CategoryGeneral      CategoryType = 30
	CategoryFMMU         CategoryType = 40
	CategorySyncManager  CategoryType = 41
	CategoryFMMUExtended CategoryType = 42
	CategorySyncUnit     CategoryType = 43
	CategoryTxPDO        CategoryType = 50
	CategoryRxPDO        CategoryType = 51
	CategoryDC           CategoryType = 60
	CategoryEnd          CategoryType = 0xFFFF
)

// String returns the specification's name of t, or its number in hex.
func (t CategoryType) String() string {
	switch t {
	case CategoryNOP:
		return "NOP"
	case CategoryStrings:
		return "Strings"
	case CategoryDataTypes:
		return "DataTypes"
	case CategoryGeneral:
		return "General"
	case CategoryFMMU:
		return "FMMU"
	case CategorySyncManager:
		return "SyncManager"
	case CategoryFMMUExtended:
		return "FMMUExtended"
	case CategorySyncUnit:
		return "SyncUnit"
	case CategoryTxPDO:
		return "TxPDO"
	case CategoryRxPDO:
		return "RxPDO"
	case CategoryDC:
		return "DC"
	case CategoryEnd:
		return "End"
	}
	return fmt.Sprintf("Category(%#04x)", uint16(t))
}

// interpreted reports whether this package decodes categories of type t into [Device]
// fields rather than keeping them raw.
func (t CategoryType) interpreted() bool {
	switch t {
	case CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager,
		CategoryTxPDO, CategoryRxPDO, CategoryDC:
		return true
	}
	return false
}

// Category records one category of an image: where it sits in the sequence, which part of
// the [Device] it holds, and the bytes this package does not interpret. [Parse] fills
// [Device.Categories] with one Category per category of the image; [Encode] follows it.
type Category struct {
	Type CategoryType

	// Count says how much of the Device's matching field this category holds: the number
	// of strings, FMMUs, SyncManagers, PDOs or DC syncs it stores, taken in order from
	// Device.Strings, FMMUs, SyncManagers, TxPDOs, RxPDOs or DC; for General, how many
	// bytes of the 32-byte General record it stores (older images may store fewer).
	Count int

	// Raw is the whole content of a category this package does not interpret (a vendor
	// or device specific type, DataTypes, FMMUExtended, SyncUnit, a second General, an
	// empty Strings). Encode writes it as is. It is nil for interpreted categories.
	Raw []byte

	// Tail holds the bytes of an interpreted category after its decoded content: the
	// padding byte to a word boundary, or trailing data this package does not decode.
	Tail []byte
}

// generalSize is the size of the General record (ETG.1000.6 Table 21).
const generalSize = 32

// General is the General category (ETG.1000.6 Table 21). String
// indexes refer to [Device.Strings]: 0 means none, 1 the first string.
type General struct {
	GroupIndex    uint8 // string index of the device group, e.g. "DigOut"
	ImageIndex    uint8 // string index of the image name
	OrderIndex    uint8 // string index of the order code, e.g. "EL2004"
	NameIndex     uint8 // string index of the device name
	Reserved04    uint8
	CoEDetails    CoEDetails
	FoEDetails    uint8 // bit 0: FoE supported
	EoEDetails    uint8 // bit 0: EoE supported
	SoEChannels   uint8
	DS402Channels uint8
	SysmanClass   uint8
	Flags         GeneralFlags

	// EBusCurrent is the current in mA the device draws from the E-Bus; a negative value
	// means it feeds that much into the E-Bus (an EK1100 says -2000).
	EBusCurrent int16

	Reserved0E    [2]byte
	PhysicalPorts PhysicalPorts

	// PhysicalMemoryAddress is the ESC address of the identification value when
	// Flags has GeneralIdentPhysicalMemory.
	PhysicalMemoryAddress uint16

	Reserved14 [12]byte
}

// CoEDetails is the CoE details byte of the General category.
type CoEDetails uint8

// CoE detail bits.
const (
	CoESDO            CoEDetails = 1 << iota // SDO supported
	CoESDOInfo                               // SDO information service supported
	CoEPDOAssign                             // PDO assignment writable
	CoEPDOConfig                             // PDO mapping writable
	CoEStartupUpload                         // upload at startup
	CoECompleteAccess                        // SDO complete access supported
)

// GeneralFlags is the flags byte of the General category.
type GeneralFlags uint8

// General flag bits.
const (
	GeneralEnableSafeOp         GeneralFlags = 1 << iota // SafeOp may be entered without valid outputs
	GeneralEnableNotLRW                                  // the device does not support LRW
	GeneralMailboxDataLinkLayer                          // mailbox data link layer supported
	GeneralIdentALStatus                                 // ID selector mirrored in AL status code
	GeneralIdentPhysicalMemory                           // ID selector at PhysicalMemoryAddress
)

// PhysicalPorts describes ports 0–3 of the device, four bits each, port 0 in the lowest.
type PhysicalPorts uint16

// Port types of PhysicalPorts.
const (
	PortUnused = 0x0
	PortMII    = 0x1
	PortEBus   = 0x3
)

// Port returns the four-bit type of port i (0–3), e.g. PortMII or PortEBus.
func (p PhysicalPorts) Port(i int) uint8 { return uint8(p>>(4*(i&3))) & 0xF }

// decodeGeneral decodes up to generalSize bytes of b; missing bytes read as zero.
func decodeGeneral(b []byte) (General, int) {
	var r [generalSize]byte
	n := copy(r[:], b)
	g := General{
		GroupIndex:            r[0],
		ImageIndex:            r[1],
		OrderIndex:            r[2],
		NameIndex:             r[3],
		Reserved04:            r[4],
		CoEDetails:            CoEDetails(r[5]),
		FoEDetails:            r[6],
		EoEDetails:            r[7],
		SoEChannels:           r[8],
		DS402Channels:         r[9],
		SysmanClass:           r[10],
		Flags:                 GeneralFlags(r[11]),
		EBusCurrent:           int16(binary.LittleEndian.Uint16(r[12:])),
		Reserved0E:            [2]byte{r[14], r[15]},
		PhysicalPorts:         PhysicalPorts(binary.LittleEndian.Uint16(r[16:])),
		PhysicalMemoryAddress: binary.LittleEndian.Uint16(r[18:]),
	}
	copy(g.Reserved14[:], r[20:])
	return g, n
}

// appendGeneral appends the first n bytes of g's 32-byte record.
func appendGeneral(b []byte, g *General, n int) []byte {
	var r [generalSize]byte
	r[0], r[1], r[2], r[3], r[4] = g.GroupIndex, g.ImageIndex, g.OrderIndex, g.NameIndex, g.Reserved04
	r[5], r[6], r[7] = uint8(g.CoEDetails), g.FoEDetails, g.EoEDetails
	r[8], r[9], r[10], r[11] = g.SoEChannels, g.DS402Channels, g.SysmanClass, uint8(g.Flags)
	binary.LittleEndian.PutUint16(r[12:], uint16(g.EBusCurrent))
	r[14], r[15] = g.Reserved0E[0], g.Reserved0E[1]
	binary.LittleEndian.PutUint16(r[16:], uint16(g.PhysicalPorts))
	binary.LittleEndian.PutUint16(r[18:], g.PhysicalMemoryAddress)
	copy(r[20:], g.Reserved14[:])
	return append(b, r[:min(n, generalSize)]...)
}

// decodeStrings decodes a Strings category: a count byte, then that many strings, each a
// length byte and that many bytes. It returns the strings and the bytes they took.
func decodeStrings(b []byte) ([]string, int, error) {
	if len(b) == 0 {
		return nil, 0, nil
	}
	n := int(b[0])
	ss := make([]string, 0, n)
	p := 1
	for i := range n {
		if p >= len(b) {
			return nil, 0, fmt.Errorf("string %d of %d starts past the category end", i+1, n)
		}
		l := int(b[p])
		if p+1+l > len(b) {
			return nil, 0, fmt.Errorf("string %d of %d (%d bytes) runs past the category end", i+1, n, l)
		}
		ss = append(ss, string(b[p+1:p+1+l]))
		p += 1 + l
	}
	return ss, p, nil
}

func appendStrings(b []byte, ss []string) ([]byte, error) {
	if len(ss) > 0xFF {
		return nil, fmt.Errorf("%d strings in one category, at most 255 fit", len(ss))
	}
	b = append(b, uint8(len(ss)))
	for i, s := range ss {
		if len(s) > 0xFF {
			return nil, fmt.Errorf("string %d is %d bytes, at most 255 fit", i+1, len(s))
		}
		b = append(b, uint8(len(s)))
		b = append(b, s...)
	}
	return b, nil
}

// FMMUUsage is what an FMMU is meant for (ETG.1000.6 Table 23), one byte per FMMU in the
// FMMU category.
type FMMUUsage uint8

// FMMU usages.
const (
	FMMUUnused            FMMUUsage = 0x00
	FMMUOutputs           FMMUUsage = 0x01 // process data outputs (master to device)
	FMMUInputs            FMMUUsage = 0x02 // process data inputs (device to master)
	FMMUSyncManagerStatus FMMUUsage = 0x03 // read of a SyncManager status (mailbox polling)
)

// fmmuPadding also means unused; it fills the FMMU category to a whole word.
const fmmuPadding FMMUUsage = 0xFF

// String names u.
func (u FMMUUsage) String() string {
	switch u {
	case FMMUUnused, fmmuPadding:
		return "unused"
	case FMMUOutputs:
		return "outputs"
	case FMMUInputs:
		return "inputs"
	case FMMUSyncManagerStatus:
		return "SyncManager status"
	}
	return fmt.Sprintf("FMMUUsage(%#02x)", uint8(u))
}

// decodeFMMUs returns one usage per byte, leaving trailing 0xFF padding out of the count.
func decodeFMMUs(b []byte) ([]FMMUUsage, int) {
	n := len(b)
	for n > 0 && FMMUUsage(b[n-1]) == fmmuPadding {
		n--
	}
	us := make([]FMMUUsage, n)
	for i := range us {
		us[i] = FMMUUsage(b[i])
	}
	return us, n
}

func appendFMMUs(b []byte, us []FMMUUsage) []byte {
	for _, u := range us {
		b = append(b, uint8(u))
	}
	return b
}

// SyncManagerType is what a SyncManager is used for (byte 7 of a SyncManager
// element). Its String names it ("mailbox out"), or "SyncManagerType(N)".
type SyncManagerType uint8

//go:generate go tool stringer -type=SyncManagerType -linecomment

// SyncManager types: mailboxes and process data, out from the master to
// the device, in from the device to the master.
const (
	SMUnused         SyncManagerType = 0 // unused
	SMMailboxOut     SyncManagerType = 1 // mailbox out
	SMMailboxIn      SyncManagerType = 2 // mailbox in
	SMProcessDataOut SyncManagerType = 3 // process data out
	SMProcessDataIn  SyncManagerType = 4 // process data in
)

// IsProcessData reports whether t is one of the two process data types.
func (t SyncManagerType) IsProcessData() bool {
	return t == SMProcessDataOut || t == SMProcessDataIn
}

// syncManagerSize is the size of one SyncManager element.
const syncManagerSize = 8

// SyncManager is one element of the SyncManager category (ETG.1000.6, ETG.2010): the
// initial configuration of ESC SyncManager registers 0x0800+8n.
type SyncManager struct {
	StartAddress uint16
	// Length in bytes. Process data SyncManagers often say 0 and leave it to the master
	// to size them from their PDOs (see [Device.SyncManagerBits]).
	Length  uint16
	Control uint8 // control register byte (0x0804+8n)
	Status  uint8 // status register byte, not used
	// Enable holds bit 0 enable, bit 1 fixed content, bit 2 virtual, bit 3 enable in OP
	// only.
	Enable uint8
	Type   SyncManagerType
}

func decodeSyncManagers(b []byte) ([]SyncManager, int) {
	sms := make([]SyncManager, len(b)/syncManagerSize)
	for i := range sms {
		e := b[i*syncManagerSize:]
		sms[i] = SyncManager{
			StartAddress: binary.LittleEndian.Uint16(e[0:]),
			Length:       binary.LittleEndian.Uint16(e[2:]),
			Control:      e[4],
			Status:       e[5],
			Enable:       e[6],
			Type:         SyncManagerType(e[7]),
		}
	}
	return sms, len(sms) * syncManagerSize
}

func appendSyncManagers(b []byte, sms []SyncManager) []byte {
	for _, sm := range sms {
		b = binary.LittleEndian.AppendUint16(b, sm.StartAddress)
		b = binary.LittleEndian.AppendUint16(b, sm.Length)
		b = append(b, sm.Control, sm.Status, sm.Enable, uint8(sm.Type))
	}
	return b
}

// dcSyncSize is the size of one DC category element.
const dcSyncSize = 24

// DCSync is one element of the DC category (ETG.2010): an operation mode of the
// device's distributed clock SYNC signals.
type DCSync struct {
	CycleTime0       uint32 // SYNC0 cycle time in ns (0: the master's cycle)
	ShiftTime0       uint32 // SYNC0 shift in ns
	ShiftTime1       uint32 // SYNC1 shift in ns
	Sync1CycleFactor int16
	AssignActivate   uint16 // value for ESC registers 0x0980–0x0981
	Sync0CycleFactor int16
	NameIndex        uint8 // string index of the mode's name, e.g. "DcSync"
	DescIndex        uint8 // string index of its description
	Reserved         [4]byte
}

func decodeDCSyncs(b []byte) ([]DCSync, int) {
	le := binary.LittleEndian
	ds := make([]DCSync, len(b)/dcSyncSize)
	for i := range ds {
		e := b[i*dcSyncSize:]
		ds[i] = DCSync{
			CycleTime0:       le.Uint32(e[0:]),
			ShiftTime0:       le.Uint32(e[4:]),
			ShiftTime1:       le.Uint32(e[8:]),
			Sync1CycleFactor: int16(le.Uint16(e[12:])),
			AssignActivate:   le.Uint16(e[14:]),
			Sync0CycleFactor: int16(le.Uint16(e[16:])),
			NameIndex:        e[18],
			DescIndex:        e[19],
			Reserved:         [4]byte(e[20:24]),
		}
	}
	return ds, len(ds) * dcSyncSize
}

func appendDCSyncs(b []byte, ds []DCSync) []byte {
	le := binary.LittleEndian
	for _, d := range ds {
		b = le.AppendUint32(b, d.CycleTime0)
		b = le.AppendUint32(b, d.ShiftTime0)
		b = le.AppendUint32(b, d.ShiftTime1)
		b = le.AppendUint16(b, uint16(d.Sync1CycleFactor))
		b = le.AppendUint16(b, d.AssignActivate)
		b = le.AppendUint16(b, uint16(d.Sync0CycleFactor))
		b = append(b, d.NameIndex, d.DescIndex)
		b = append(b, d.Reserved[:]...)
	}
	return b
}

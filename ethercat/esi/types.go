package esi

import "github.com/ecagent/ecagent/ethercat/internal/etgxml"

// File is one ESI file: its vendor, its device groups and its devices.
type File struct {
	Name     string // the file's name as the caller gave it
	Version  string // EtherCATInfo@Version, the ETG.2000 schema version
	Vendor   Vendor
	Groups   []Group
	Devices  []Device
	Warnings []Warning
}

// Error is one problem in one place of a file (see etgxml.Error): the
// file, line, column, element path, attribute and value.
type Error = etgxml.Error

// Warning is something a file holds that the reader did not take, listed
// once per path and reason with a count and its first line.
type Warning = etgxml.Warning

// Text is a text in one language.
type Text struct {
	LcID  int // Windows locale id (1033 English, 1031 German); 0 when the file gives none
	Value string
}

// Texts is a text in the languages a file gives it, in file order.
type Texts []Text

// English is the locale id String prefers.
const English = 1033

// String returns the English text, else the one without a locale, else
// the first; "" for none.
func (t Texts) String() string {
	for _, x := range t {
		if x.LcID == English {
			return x.Value
		}
	}
	for _, x := range t {
		if x.LcID == 0 {
			return x.Value
		}
	}
	if len(t) > 0 {
		return t[0].Value
	}
	return ""
}

// Vendor is the file's vendor.
type Vendor struct {
	ID             uint32 // the EtherCAT vendor id
	Name           Texts
	ImageData16x14 []byte // the vendor's 16×14 BMP, when the file holds it
}

// Group is a device group, the tree node a configuration tool sorts
// devices under.
type Group struct {
	Type           string // the key devices name in GroupType
	Name           Texts
	ParentGroup    string
	SortOrder      int32
	ImageData16x14 []byte
}

// Device is one device description: one Device element of the file, one
// (product code, revision) of the vendor.
type Device struct {
	Line        int    // where the description starts in the file
	Physics     string // the ports' physics, e.g. YY (two E-bus) or KK (100BASE-TX)
	Invisible   bool   // hidden from a configuration tool's device list
	Type        string // the order code, e.g. EK1100
	ProductCode uint32
	RevisionNo  uint32
	// CheckRevisionNo is the comparison the device asks a master to make
	// of the revision it finds with RevisionNo (Type@CheckRevisionNo):
	// EQ, EQ_OR_G, LW_EQ, ..., or "" when the file does not say.
	CheckRevisionNo string
	Name            Texts
	GroupType       string // the Group.Type the device belongs to
	Info            Info
	Profiles        []Profile
	FMMUs           []FMMU
	SyncManagers    []SyncManager
	RxPDOs          []PDO // outputs, master to device
	TxPDOs          []PDO // inputs, device to master
	Mailbox         *Mailbox
	DC              *DC
	EEPROM          *EEPROM
	Image16x14      string // the name of an image file, the obsolete form
	ImageData16x14  []byte
}

// Dictionary returns the first profile's object dictionary, nil when the
// device describes none.
func (d *Device) Dictionary() *Dictionary {
	for i := range d.Profiles {
		if d.Profiles[i].Dictionary != nil {
			return d.Profiles[i].Dictionary
		}
	}
	return nil
}

// Info is what a master needs of Device/Info: times and addresses. A zero
// field means the file does not give it.
type Info struct {
	EBusCurrent            int32  // mA the device draws from the E-bus; negative: it feeds the E-bus
	IdentificationAdo      uint16 // register holding the explicit device identification
	IdentificationReg      bool   // Info/IdentificationReg134: the id is read from 0x0134
	PreopTimeout           uint32 // ms, StateMachine/Timeout: INIT to PREOP
	SafeopOpTimeout        uint32 // ms, PREOP to SAFEOP and SAFEOP to OP
	BackToInitTimeout      uint32 // ms
	BackToSafeopTimeout    uint32 // ms, OP to SAFEOP
	MailboxRequestTimeout  uint32 // ms, Mailbox/Timeout/RequestTimeout
	MailboxResponseTimeout uint32 // ms, Mailbox/Timeout/ResponseTimeout
}

// Profile is a device profile: the CiA or ETG profile number and the
// object dictionary.
type Profile struct {
	ProfileNo  uint32 // e.g. 5001 (MDP), 402 (drive); 0 when given per channel only
	AddInfo    uint32
	Channels   []Channel
	Dictionary *Dictionary
}

// Channel is one ChannelInfo of a profile.
type Channel struct {
	ProfileNo uint32
	AddInfo   uint32
}

// NoSyncManager is the SyncManager of a PDO or FMMU that names none.
const NoSyncManager = etgxml.NoSyncManager

// SMType is what a sync manager carries (the Sm element's text).
type SMType uint8

// The sync manager types; SMUnused is an Sm element with no text, an SM
// the device has but does not use.
const (
	SMUnused SMType = iota
	SMMailboxOut
	SMMailboxIn
	SMOutputs
	SMInputs
)

// String returns the type as the file writes it.
func (t SMType) String() string {
	switch t {
	case SMMailboxOut:
		return "MBoxOut"
	case SMMailboxIn:
		return "MBoxIn"
	case SMOutputs:
		return "Outputs"
	case SMInputs:
		return "Inputs"
	}
	return ""
}

// SyncManager is one Sm element, in order: the first is SM0.
type SyncManager struct {
	Type         SMType
	StartAddress uint16
	// DefaultSize, MinSize and MaxSize are in bytes; 0 when the file does
	// not give them (a process data SM is then sized from its PDOs).
	DefaultSize uint16
	MinSize     uint16
	MaxSize     uint16
	ControlByte uint8
	Enable      bool
	Virtual     bool // the SM has no hardware: its data is in another SM's
	OpOnly      bool // enabled in OP only
}

// FMMUUsage is what an FMMU maps (the Fmmu element's text).
type FMMUUsage uint8

// The FMMU usages; FMMUUnused is an Fmmu element with no text.
const (
	FMMUUnused FMMUUsage = iota
	FMMUOutputs
	FMMUInputs
	FMMUMailboxState
	FMMUDynamicInputs
	FMMUDynamicOutputs
)

// String returns the usage as the file writes it.
func (u FMMUUsage) String() string {
	switch u {
	case FMMUOutputs:
		return "Outputs"
	case FMMUInputs:
		return "Inputs"
	case FMMUMailboxState:
		return "MBoxState"
	case FMMUDynamicInputs:
		return "DynamicInputs"
	case FMMUDynamicOutputs:
		return "DynamicOutputs"
	}
	return ""
}

// FMMU is one Fmmu element, in order: the first is FMMU0.
type FMMU struct {
	Usage       FMMUUsage
	SyncManager int // Fmmu@Sm, or NoSyncManager
	SyncUnit    int // Fmmu@Su, or -1
	OpOnly      bool
}

// PDO is one RxPdo or TxPdo element.
type PDO struct {
	Line        int
	Index       uint16
	Name        Texts
	SyncManager int  // the SM the PDO is assigned to by default (@Sm), or NoSyncManager: not assigned by default
	SyncUnit    int  // @Su, or -1
	Fixed       bool // the mapping cannot be changed
	Mandatory   bool // the PDO must be assigned
	Virtual     bool
	Exclude     []uint16 // PDOs that cannot be assigned together with this one
	Entries     []PDOEntry
}

// PDOEntry is one mapped object of a PDO; an Index of 0 is a gap of
// BitLen bits.
type PDOEntry struct {
	Index    uint16
	SubIndex uint8
	BitLen   uint16
	Name     Texts
	DataType string // as the file writes it: BOOL, INT, UDINT, ...
	Fixed    bool
}

// Padding reports whether the entry is a gap.
func (e PDOEntry) Padding() bool { return e.Index == 0 }

// BitLen returns the sum of the entries' lengths in bits.
func (p *PDO) BitLen() int {
	n := 0
	for _, e := range p.Entries {
		n += int(e.BitLen)
	}
	return n
}

package eni

import "github.com/ecagent/ecagent/ethercat/internal/etgxml"

// ProcessData is a slave's ProcessData element: where its data lies in
// the frames, its sync managers and its PDOs.
type ProcessData struct {
	Send         []BitRange // the slave's outputs in the frames
	Recv         []BitRange // the slave's inputs in the frames
	SyncManagers []SyncManager
	RxPDOs       []PDO // outputs
	TxPDOs       []PDO // inputs
}

// BitRange is a run of bits in the cyclic frames' logical image.
type BitRange struct {
	BitStart  uint32
	BitLength uint32
	// SyncManagers are the SMs whose data the range holds, from the
	// Sm0…Sm15 attributes; nil when the file gives none.
	SyncManagers []uint8
}

// SyncManager is one Sm0…Sm15 element of ProcessData: a process data SM
// as the configuration sets it up.
type SyncManager struct {
	No           uint8  // N of SmN
	Type         string // Outputs, Inputs, MBoxOut or MBoxIn
	StartAddress uint16
	ControlByte  uint8
	Enable       bool
	// DefaultSize, MinSize and MaxSize are in bytes; nil when absent.
	DefaultSize *uint16
	MinSize     *uint16
	MaxSize     *uint16
	// PDOs are the PDOs assigned to the SM, in order.
	PDOs []uint16
}

// NoSyncManager is the SyncManager of a PDO that names none.
const NoSyncManager = etgxml.NoSyncManager

// PDO is one RxPdo or TxPdo element: a PDO of the slave, assigned or not.
type PDO struct {
	Line        int
	Index       uint16
	Name        string
	SyncManager int // @Sm, or NoSyncManager: not assigned
	Fixed       bool
	Mandatory   bool
	Exclude     []uint16
	Entries     []PDOEntry
}

// PDOEntry is one mapped object of a PDO; an Index of 0 is a gap of
// BitLen bits.
type PDOEntry struct {
	Index    uint16
	SubIndex uint8
	BitLen   uint16
	Name     string
	DataType string // as the file writes it: BOOL, INT, UDINT, ...
	Comment  string
}

// Padding reports whether the entry is a gap.
func (e PDOEntry) Padding() bool { return e.Index == 0 }

// Mailbox is a slave's Mailbox element.
type Mailbox struct {
	DataLinkLayer bool
	Send          MailboxArea // master to slave (the slave's SM0)
	Recv          MailboxArea // slave to master (SM1)
	// PollTime is the polling period of the input mailbox in ms; nil
	// when the master is to watch the mailbox state bit instead
	// (StatusBitAddr) or the file gives neither.
	PollTime *uint32
	// StatusBitAddr is the bit of the mailbox state in the logical image
	// (see Master.MailboxStates); nil when absent.
	StatusBitAddr *uint32
	Bootstrap     *Bootstrap // nil when the file has none
	Protocols     []string   // AoE, EoE, CoE, FoE, SoE, VoE, as listed
	CoE           *CoE       // nil when the file has no CoE element
}

// MailboxArea is one mailbox's place and size in the slave's memory.
type MailboxArea struct {
	Start  uint16
	Length uint16
}

// Bootstrap is the mailbox layout in the BOOT state.
type Bootstrap struct {
	Send MailboxArea
	Recv MailboxArea
}

// CoE is the CoE part of a slave's mailbox: the startup SDOs and the
// profile.
type CoE struct {
	InitCmds []CoEInitCmd
	Profile  *Profile // nil when absent
}

// CoEInitCmd is one startup SDO transfer, run at the transitions named in
// the order the file lists them.
type CoEInitCmd struct {
	Line        int
	Transitions []string
	Comment     string
	Timeout     uint32 // ms
	// Ccs is the client command specifier: 1 an SDO download (a write),
	// as TwinCAT and EC-Engineer write it; 2 an upload (a read).
	Ccs            uint8
	Index          uint16
	SubIndex       uint8
	Data           []byte
	CompleteAccess bool
	Fixed          bool // a configuration tool must not change it
	Disabled       bool // the command is listed but not to be sent
}

// Download reports whether the command writes (Ccs 1).
func (c CoEInitCmd) Download() bool { return c.Ccs == 1 }

// Profile is the CoE profile of a slave (CoE/Profile).
type Profile struct {
	ProfileNo uint32   // e.g. 402 for a drive; 0 when given per channel only
	Channels  []uint32 // ChannelInfo/ProfileNo, in order
}

// Cyclic is one Cyclic element: frames sent every CycleTime.
type Cyclic struct {
	Comment string
	// CycleTime is the period in µs the frames were planned for; nil
	// when the file leaves it to the application.
	CycleTime *uint32
	Frames    []Frame
}

// Frame is one cyclic frame.
type Frame struct {
	Comment string
	Cmds    []CyclicCmd
}

// CyclicCmd is one datagram of a cyclic frame.
type CyclicCmd struct {
	Line    int
	States  []string // INIT, PREOP, SAFEOP, OP, BOOT: the states the datagram is sent in
	Comment string
	Cmd     Command
	Address Address
	// DataLength is the datagram's data size in bytes (the DataLength
	// element, or the size of a Data element).
	DataLength uint16
	Data       []byte  // the Data element, when given
	Cnt        *uint16 // the working counter expected; nil: not checked
	// InputOffs and OutputOffs are the byte offsets in the process image
	// the datagram's data is copied from and to; nil when absent.
	InputOffs  *uint32
	OutputOffs *uint32
}

// ProcessImage is the Config/ProcessImage element: the image's sizes and
// the variables in it.
type ProcessImage struct {
	Inputs  Image
	Outputs Image
}

// Image is one direction of the process image.
type Image struct {
	ByteSize  uint32
	Variables []Variable
}

// Variable is one named value of the process image.
type Variable struct {
	Line     int
	Name     string // e.g. Term 3 (EL2004).Channel 1.Output
	Comment  string
	DataType string // BOOL, INT, UDINT, …, "" when absent
	BitSize  uint32
	BitOffs  uint32 // from the image's start
}

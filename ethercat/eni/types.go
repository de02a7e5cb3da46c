package eni

import (
	"net"

	"github.com/ecagent/ecagent/ethercat/internal/etgxml"
)

// Config is one ENI file.
type Config struct {
	Name         string // the file's name as the caller gave it
	Version      string // EtherCATConfig@Version, the ETG.2100 schema version
	Master       Master
	Slaves       []Slave // in ring order, as the file lists them
	Cyclic       []Cyclic
	ProcessImage *ProcessImage // nil when the file has none
	Warnings     []Warning
}

// Error is one problem in one place of a file (see etgxml.Error): the
// file, line, column, element path, attribute and value.
type Error = etgxml.Error

// Warning is something a file holds that the reader did not take, listed
// once per path and reason with a count and its first line.
type Warning = etgxml.Warning

// Master is the Config/Master element.
type Master struct {
	Name        string
	Destination net.HardwareAddr // the frames' destination MAC address
	Source      net.HardwareAddr // the frames' source MAC address
	// EtherType is the frames' EtherType, 0x88A4 (the file may write it
	// in network order, 88a4, or byte-swapped as TwinCAT does, a488).
	EtherType     uint16
	MailboxStates *MailboxStates // nil when the file has none
	EoE           *MasterEoE     // nil when the file has none
	InitCmds      []InitCmd
}

// MailboxStates is where the master's mailbox state FMMUs map each
// slave's input mailbox state bit: a logical address and the number of
// bytes.
type MailboxStates struct {
	StartAddr uint32
	Count     uint32
}

// MasterEoE is the master's Ethernet over EtherCAT switch settings.
type MasterEoE struct {
	MaxPorts  uint32
	MaxFrames uint32
	MaxMACs   uint32
}

// Slave is one Config/Slave element.
type Slave struct {
	Line          int // where the slave starts in the file
	Info          SlaveInfo
	ProcessData   *ProcessData // nil when the slave has no process data
	Mailbox       *Mailbox     // nil when the slave has no mailbox
	InitCmds      []InitCmd
	PreviousPorts []PreviousPort
	DC            *DC // nil when the slave's DC is not configured
}

// SlaveInfo is a slave's identity and addresses.
type SlaveInfo struct {
	Name string
	// PhysAddr is the configured station address the master assigns;
	// nil when the file leaves it to the master.
	PhysAddr *uint16
	// AutoIncAddr is the slave's auto-increment address as the file
	// writes it (0, 0xFFFF, 0xFFFE… for positions 0, 1, 2…); nil when
	// the file does not give it. See Position.
	AutoIncAddr *uint16
	// Identification is the explicit device identification the slave
	// must answer with (the rotary switch or the alias); nil when none.
	Identification *Identification
	Physics        string // the ports' physics, e.g. YY
	VendorID       uint32
	ProductCode    uint32
	RevisionNo     uint32
	SerialNo       *uint32 // nil when the file does not give it
	// ProductRevision is the order code with its revision as the tool
	// shows it (EK1100-0000-0018), "" when absent.
	ProductRevision string
}

// Position returns the ring position AutoIncAddr stands for (0 for the
// first slave) and whether the file gives one.
func (i SlaveInfo) Position() (int, bool) {
	if i.AutoIncAddr == nil {
		return 0, false
	}
	return int(uint16(-int16(*i.AutoIncAddr))), true
}

// Identification is an explicit device identification: the value the
// register at Ado must hold.
type Identification struct {
	Ado   uint16
	Value uint16
}

// PreviousPort is the port of the previous slave this slave is connected
// to.
type PreviousPort struct {
	Selected bool   // the connection in use (a slave may list alternatives)
	Port     string // A, B, C or D
	// PhysAddr is the configured station address of the previous slave;
	// nil when the file does not give it.
	PhysAddr *uint16
}

// DC is a slave's distributed-clock configuration.
type DC struct {
	PotentialReferenceClock bool
	ReferenceClock          bool    // this slave is the reference clock
	CycleTime0              *uint32 // SYNC0 cycle in ns; nil when absent
	// CycleTime1 is the SYNC1 cycle in ns (ETG.2100: relative to SYNC0;
	// it may be negative); nil when absent.
	CycleTime1 *int32
	ShiftTime  *int32 // SYNC0 shift in ns; nil when absent
	// AssignActivate is the value for register 0x0980, where a tool
	// writes it here rather than in an init command; nil when absent.
	AssignActivate *uint16
}

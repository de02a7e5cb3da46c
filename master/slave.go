package master

import (
	"fmt"
	"sync/atomic"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// firstStationAddress is the configured station address of the first
// slave; the others follow in ring order (0x1001, 0x1002, …), as SOEM and
// TwinCAT assign them.
const firstStationAddress = 0x1001

// NoParent is the Slave.Parent of a slave connected to the master itself.
const NoParent = -1

// Slave is one device found by Scan. Its exported fields are set by Scan
// (identity, topology, layout) and by the process-image mapping (Inputs,
// Outputs) and do not change afterwards; read them freely. The AL state
// changes and is read with State, which is safe from any goroutine.
type Slave struct {
	// mbxCounter is the counter of the last mailbox request sent to the
	// slave (1..7; 0 before the first), carried from one transfer to the next.
	mbxCounter uint8
	// mbxClaims counts the acyclic mailbox transfers in progress with the
	// slave: while above zero the cyclic polling leaves its mailbox alone,
	// so that it does not take the answers they wait for.
	mbxClaims atomic.Int32
	// held: a maintenance procedure has the slave (Hold).
	held atomic.Bool

	// Position is the ring position, 0 for the slave next to the master.
	Position int
	// StationAddress is the configured station address the master gave it.
	StationAddress uint16
	// Alias is the configured station alias (register 0x0012), 0 if unset.
	Alias uint16

	// Identity is vendor, product code, revision and serial number from
	// the SII header.
	Identity Identity
	// Name is the device name from the SII (General category), e.g.
	// "EL2004 4K. Dig. Ausgang 24V, 0.5A"; OrderCode is e.g. "EL2004".
	Name      string
	OrderCode string

	// ESC is the slave controller's information block (0x0000): FMMU and
	// SyncManager counts, port types, features.
	ESC esc.Info
	// DC reports distributed-clock support (ESC feature bit).
	DC bool
	// DeviceEmulation reports an ESC without application controller
	// (register 0x0141 bit 0): AL status simply follows AL control.
	DeviceEmulation bool

	// Ports tells which ports have an established link with the loop
	// open (DL status 0x0110): port 0 faces the master.
	Ports [esc.PortCount]bool
	// Parent is the ring position of the slave this one hangs off, or
	// NoParent when it is connected to the master.
	Parent int

	// Mailbox is the standard mailbox from the SII header (receive =
	// master to slave, SM0; send = slave to master, SM1); HasMailbox
	// tells whether it has one at all.
	Mailbox    sii.Mailbox
	HasMailbox bool
	// Protocols lists the mailbox protocols the device supports.
	Protocols sii.MailboxProtocols

	// SyncManagers describes the process-data SyncManagers from the SII,
	// each with the bits of the PDOs assigned to it: by default (the SII)
	// after Scan, as the slave reports or the configuration sets them
	// (see PDOSource) once the PDO assignment has been read in PREOP.
	SyncManagers []ProcessDataSM
	// InputBits and OutputBits are the totals over SyncManagers.
	InputBits  int
	OutputBits int

	// Inputs and Outputs locate the slave's bits in the process image,
	// relative to ProcessImage.Inputs() and Outputs(); they are zero until
	// the image is mapped (BringUp, or the first request for SAFEOP).
	Inputs  BitRange
	Outputs BitRange

	// RxPDOs (outputs) and TxPDOs (inputs) are the PDOs assigned to the
	// process-data SyncManagers, in image order, each entry with its bit
	// offset in Outputs or Inputs; set when the image is mapped.
	RxPDOs, TxPDOs []PDO
	// PDOSource tells where the assignment came from: PDOSourceSII,
	// PDOSourceCoE or PDOSourceConfig ("sii", "coe", "config").
	PDOSource string

	// SII is the parsed SII EEPROM image.
	SII *sii.Device

	status atomic.Uint32 // AL status (0x0130) in the low half, AL status code (0x0134) in the high half

	fmmus []fmmuSetting // FMMU registers written before SAFEOP

	// preOpStartup: the startup commands run in PREOP (runPreOpStartup)
	// have run since the slave last went INIT→PREOP.
	preOpStartup bool
}

// Identity identifies a device model and unit (SII header words 0x08–0x0F,
// the same values as CoE object 0x1018).
type Identity struct {
	VendorID     uint32
	ProductCode  uint32
	Revision     uint32
	SerialNumber uint32
}

// ProcessDataSM is a process-data SyncManager of a slave, as the master
// configures it before SAFEOP.
type ProcessDataSM struct {
	Index   int                 // SyncManager number (register 0x0800 + 8·Index)
	Type    sii.SyncManagerType // sii.SMProcessDataOut or sii.SMProcessDataIn
	Start   uint16              // physical start address in the ESC
	Control uint8               // control byte from the SII
	Bits    int                 // bits of the PDOs assigned to it
}

// Bytes returns the SyncManager length: Bits rounded up to whole bytes.
func (p ProcessDataSM) Bytes() int { return (p.Bits + 7) / 8 }

// BitRange is a run of bits in the process image: Offset bits from the
// start of the area, Len bits long. Bit k of a byte is the bit of value
// 1<<k, as on the wire.
type BitRange struct {
	Offset int
	Len    int
}

// State returns the slave's AL state as last read by the master. It is
// safe to call from any goroutine.
func (s *Slave) State() esc.ALState { return s.Status().State }

// Status returns the slave's AL status (state and error flag) as last read
// by the master. It is safe to call from any goroutine.
func (s *Slave) Status() esc.ALStatus {
	v := s.status.Load()
	return esc.DecodeALStatus([]byte{byte(v), byte(v >> 8)})
}

// StatusCode returns the AL status code (0x0134) as last read by the
// master: why the slave refused or left a state. It is safe to call from
// any goroutine.
func (s *Slave) StatusCode() esc.ALStatusCode { return esc.ALStatusCode(s.status.Load() >> 16) }

func (s *Slave) setStatus(st esc.ALStatus, code esc.ALStatusCode) {
	var b [esc.ALStatusLen]byte
	st.Encode(b[:])
	s.status.Store(uint32(b[0]) | uint32(b[1])<<8 | uint32(code)<<16)
}

// displayName is the order code, or the device name when the SII has none.
func (s *Slave) displayName() string {
	if s.OrderCode != "" {
		return s.OrderCode
	}
	return s.Name
}

// String names the slave as the logs do: "slave 2 (0x1003 EL2004)".
func (s *Slave) String() string {
	return fmt.Sprintf("slave %d (%#04x %s)", s.Position, s.StationAddress, s.displayName())
}

// ProcessData reports whether the slave has inputs or outputs to map.
func (s *Slave) ProcessData() bool { return s.InputBits > 0 || s.OutputBits > 0 }

// claimMailbox marks an acyclic mailbox transfer with the slave as begun;
// releaseMailbox as ended.
func (s *Slave) claimMailbox()   { s.mbxClaims.Add(1) }
func (s *Slave) releaseMailbox() { s.mbxClaims.Add(-1) }

// mailboxClaimed reports an acyclic mailbox transfer in progress. It is
// read by the cycle: one atomic load.
func (s *Slave) mailboxClaimed() bool { return s.mbxClaims.Load() > 0 }

// Hold keeps the recovery worker off the slave while a maintenance
// procedure takes it out of OP on purpose (a firmware transfer in BOOT):
// it must not be taken back to OP half-way. Hold(false) gives it back,
// and recovery then brings it to OP as any slave out of OP. Safe from any
// goroutine.
func (s *Slave) Hold(on bool) { s.held.Store(on) }

// Held reports whether a maintenance procedure holds the slave (Hold).
func (s *Slave) Held() bool { return s.held.Load() }

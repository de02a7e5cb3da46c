package esc

import "encoding/binary"

// SyncManagerLen is the size of one SyncManager register block (0x0800 + 8·i).
const SyncManagerLen = 8

// SyncManager control byte fields.
const (
	SMModeBuffered   = 0x00 // 3-buffer mode (process data)
	SMModeMailbox    = 0x02 // 1-buffer mode (mailbox)
	SMModeMask       = 0x03
	SMDirRead        = 0x00 // ECAT reads, PDI writes (inputs, mailbox in)
	SMDirWrite       = 0x04 // ECAT writes, PDI reads (outputs, mailbox out)
	SMDirMask        = 0x0C
	SMIRQECAT        = 0x10 // interrupt in ECAT event request register
	SMIRQPDI         = 0x20 // interrupt in AL event request register
	SMWatchdog       = 0x40 // watchdog trigger enable
	SMActivateOn     = 0x01 // activate byte: SyncManager enabled
	SMActivateRepeat = 0x02 // activate byte: repeat request
)

// SyncManager is one SyncManager's configuration and status (ETG.1000.4,
// SyncManager attributes): a window of physical memory with a buffering mode
// and a direction.
type SyncManager struct {
	PhysicalStart uint16
	Length        uint16
	Control       uint8 // mode, direction, interrupts, watchdog
	Status        uint8 // read only: mailbox full, buffer state
	Activate      uint8 // enable, repeat
	PDIControl    uint8 // deactivated by the PDI, repeat acknowledge
}

// DecodeSyncManager reads a SyncManager block from b (at least SyncManagerLen bytes).
func DecodeSyncManager(b []byte) SyncManager {
	return SyncManager{
		PhysicalStart: binary.LittleEndian.Uint16(b[0:]),
		Length:        binary.LittleEndian.Uint16(b[2:]),
		Control:       b[4],
		Status:        b[5],
		Activate:      b[6],
		PDIControl:    b[7],
	}
}

// Encode writes s into b (at least SyncManagerLen bytes).
func (s SyncManager) Encode(b []byte) {
	binary.LittleEndian.PutUint16(b[0:], s.PhysicalStart)
	binary.LittleEndian.PutUint16(b[2:], s.Length)
	b[4], b[5], b[6], b[7] = s.Control, s.Status, s.Activate, s.PDIControl
}

// Enabled reports whether the SyncManager is activated.
func (s SyncManager) Enabled() bool { return s.Activate&SMActivateOn != 0 }

// Mailbox reports whether the SyncManager runs in mailbox (1-buffer) mode.
func (s SyncManager) Mailbox() bool { return s.Control&SMModeMask == SMModeMailbox }

// Writes reports whether the master writes through this SyncManager.
func (s SyncManager) Writes() bool { return s.Control&SMDirMask == SMDirWrite }

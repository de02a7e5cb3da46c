package esc

import "encoding/binary"

// SIIControlLen is the size of the SII control/status register.
const SIIControlLen = 2

// SII control/status bits (register 0x0502).
const (
	SIIWriteEnable     = 0x0001
	SIIEmulation       = 0x0020 // EEPROM emulated by the PDI
	SIIRead8Bytes      = 0x0040 // reads return 8 bytes instead of 4
	SIIAddress2Bytes   = 0x0080 // EEPROM uses two address bytes
	SIICmdRead         = 0x0100
	SIICmdWrite        = 0x0200
	SIICmdReload       = 0x0400
	SIICmdMask         = 0x0700
	SIIChecksumError   = 0x0800 // ESC configuration area checksum error
	SIIDeviceInfoError = 0x1000
	SIICommandError    = 0x2000 // NACK or invalid command
	SIIWriteError      = 0x4000
	SIIBusy            = 0x8000
)

// SIIControl is register 0x0502: the EEPROM interface's command and status.
type SIIControl uint16

// DecodeSIIControl reads SII control/status from b (at least SIIControlLen bytes).
func DecodeSIIControl(b []byte) SIIControl { return SIIControl(binary.LittleEndian.Uint16(b)) }

// Encode writes c into b (at least SIIControlLen bytes).
func (c SIIControl) Encode(b []byte) { binary.LittleEndian.PutUint16(b, uint16(c)) }

// Busy reports whether an EEPROM operation is in progress.
func (c SIIControl) Busy() bool { return c&SIIBusy != 0 }

// Failed reports whether the last command was not acknowledged or invalid.
func (c SIIControl) Failed() bool { return c&(SIICommandError|SIIWriteError) != 0 }

// ReadSize returns the bytes one read command delivers in 0x0508 (4 or 8).
func (c SIIControl) ReadSize() int {
	if c&SIIRead8Bytes != 0 {
		return 8
	}
	return 4
}

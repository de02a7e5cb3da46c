package coe

import (
	"encoding/binary"
	"fmt"
)

// EmergencyLen is the size of an emergency message after the CoE header.
const EmergencyLen = 8

// Emergency is a CoE emergency message: a device reports an error (or its
// end, error code 0) on its own initiative.
type Emergency struct {
	ErrorCode     uint16  // CiA 301 emergency error code
	ErrorRegister uint8   // object 0x1001 at the time of the error
	Data          [5]byte // manufacturer specific
}

// DecodeEmergency reads an emergency message's data (after the CoE header).
func DecodeEmergency(b []byte) (Emergency, error) {
	if len(b) < EmergencyLen {
		return Emergency{}, fmt.Errorf("emergency: %w", ErrShort)
	}
	e := Emergency{ErrorCode: binary.LittleEndian.Uint16(b), ErrorRegister: b[2]}
	copy(e.Data[:], b[3:8])
	return e, nil
}

// Encode writes e into b (at least EmergencyLen bytes).
func (e Emergency) Encode(b []byte) {
	binary.LittleEndian.PutUint16(b, e.ErrorCode)
	b[2] = e.ErrorRegister
	copy(b[3:8], e.Data[:])
}

// String formats the emergency for logs.
func (e Emergency) String() string {
	return fmt.Sprintf("emergency error code %#04x, error register %#02x, data % x", e.ErrorCode, e.ErrorRegister, e.Data[:])
}

// EmergencyMeaning says what an emergency error code (or a CiA 402 error
// code, object 0x603F) means: the exact meaning of a known code, else its
// class, with "unknown class" for codes outside every class.
func EmergencyMeaning(code uint16) string {
	if m, ok := meaningOf(emergencyMeanings[:], code); ok {
		return m
	}
	return fmt.Sprintf("unknown class 0x%02X", code>>8)
}

// emergencyMeanings are the error codes whose meaning is fixed by CiA 301,
// the drive profile CiA 402 (IEC 61800-7-201; the codes of object 0x603F
// are from the same table) or ETG.1000.6 (the EtherCAT state machine codes
// 0xA0xx), then the classes that name the codes not listed. It is never
// written.
var emergencyMeanings = [...]codeMeaning[uint16]{
	{0x2310, 0, "continuous over current (device output side)"},
	{0x3210, 0, "DC link over-voltage"},
	{0x3220, 0, "DC link under-voltage"},
	{0x4210, 0, "device temperature too high"},
	{0x5530, 0, "EEPROM fault"},
	{0x6010, 0, "software reset by watchdog"},
	{0x6320, 0, "parameter error"},
	{0x7121, 0, "motor blocked"},
	{0x7305, 0, "incremental sensor 1 fault"},
	{0x7500, 0, "communication error"},
	{0x8110, 0, "CAN overrun (objects lost)"},
	{0x8120, 0, "CAN in error passive mode"},
	{0x8130, 0, "life guard or heartbeat error"},
	{0x8210, 0, "PDO not processed due to length error"},
	{0x8220, 0, "PDO length exceeded"},
	{0x8311, 0, "excess torque"},
	{0x8400, 0, "velocity (speed) controller error"},
	{0x8500, 0, "position controller error"},
	{0x8611, 0, "following error"},
	{0x8612, 0, "reference limit"},
	{0x8700, 0, "sync controller error"},
	{0xA000, 0, "transition from PREOP to SAFEOP failed"},
	{0xA001, 0, "transition from SAFEOP to OP failed"},
	// The classes of CiA 301's table, the narrower ones (two hexadecimal
	// digits) first.
	{0x0000, 0xFF00, "error reset or no error"},
	{0x2100, 0xFF00, "current, device input side"},
	{0x2200, 0xFF00, "current inside the device"},
	{0x2300, 0xFF00, "current, device output side"},
	{0x3100, 0xFF00, "mains voltage"},
	{0x3200, 0xFF00, "voltage inside the device"},
	{0x3300, 0xFF00, "output voltage"},
	{0x4100, 0xFF00, "ambient temperature"},
	{0x4200, 0xFF00, "device temperature"},
	{0x6100, 0xFF00, "internal software"},
	{0x6200, 0xFF00, "user software"},
	{0x6300, 0xFF00, "data set"},
	{0x8100, 0xFF00, "communication"},
	{0x8200, 0xFF00, "protocol error"},
	{0xF000, 0xFF00, "additional functions"},
	{0xFF00, 0xFF00, "device specific"},
	{0x1000, 0xF000, "generic error"},
	{0x2000, 0xF000, "current"},
	{0x3000, 0xF000, "voltage"},
	{0x4000, 0xF000, "temperature"},
	{0x5000, 0xF000, "device hardware"},
	{0x6000, 0xF000, "device software"},
	{0x7000, 0xF000, "additional modules"},
	{0x8000, 0xF000, "monitoring"},
	{0x9000, 0xF000, "external error"},
}

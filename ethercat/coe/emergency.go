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

package esc

import (
	"encoding/binary"
	"strconv"
)

// ALState is an EtherCAT state machine state (ETG.1000.6, AL control and
// status registers, low nibble). The zero value is not a state.
type ALState uint8

// The application-layer states.
const (
	StateNone      ALState = 0
	StateInit      ALState = 1
	StatePreOp     ALState = 2
	StateBootstrap ALState = 3
	StateSafeOp    ALState = 4
	StateOp        ALState = 8
)

// String returns the state's conventional name (INIT, PREOP, …). A value
// read with a broadcast (BRD of the AL status) is the OR of every slave's
// state: slaves in different states give their names joined by "+"
// ("INIT+OP"); 3 reads as BOOT, which it also is. Other values are
// printed as numbers.
func (s ALState) String() string {
	switch s {
	case StateNone:
		return "NONE"
	case StateInit:
		return "INIT"
	case StatePreOp:
		return "PREOP"
	case StateBootstrap:
		return "BOOT"
	case StateSafeOp:
		return "SAFEOP"
	case StateOp:
		return "OP"
	}
	if s > 0x0F {
		return "ALState(" + strconv.Itoa(int(s)) + ")"
	}
	name := ""
	for _, one := range [...]ALState{StateInit, StatePreOp, StateSafeOp, StateOp} {
		if s&one != 0 {
			if name != "" {
				name += "+"
			}
			name += one.String()
		}
	}
	return name
}

// Valid reports whether s is one of the defined states.
func (s ALState) Valid() bool {
	switch s {
	case StateInit, StatePreOp, StateBootstrap, StateSafeOp, StateOp:
		return true
	}
	return false
}

// ParseALState turns a state name (case-sensitive conventional spelling:
// INIT, PREOP, BOOT, SAFEOP, OP) into an ALState.
func ParseALState(name string) (ALState, bool) {
	for _, s := range []ALState{StateInit, StatePreOp, StateBootstrap, StateSafeOp, StateOp} {
		if s.String() == name {
			return s, true
		}
	}
	return StateNone, false
}

// ALControlLen is the size of the AL control register.
const ALControlLen = 2

// ALControl is register 0x0120: the state the master requests.
type ALControl struct {
	State       ALState
	Acknowledge bool // acknowledge an error indication in AL status
	RequestID   bool // ask the slave to show its device identification
}

// DecodeALControl reads AL control from b (at least ALControlLen bytes).
func DecodeALControl(b []byte) ALControl {
	v := binary.LittleEndian.Uint16(b)
	return ALControl{State: ALState(v & 0x0F), Acknowledge: v&0x10 != 0, RequestID: v&0x20 != 0}
}

// Encode writes c into b (at least ALControlLen bytes).
func (c ALControl) Encode(b []byte) {
	v := uint16(c.State & 0x0F)
	if c.Acknowledge {
		v |= 0x10
	}
	if c.RequestID {
		v |= 0x20
	}
	binary.LittleEndian.PutUint16(b, v)
}

// ALStatusLen is the size of the AL status register.
const ALStatusLen = 2

// ALStatus is register 0x0130: the slave's current state and whether it
// refused a transition (Error, with the reason in AL status code 0x0134).
type ALStatus struct {
	State    ALState
	Error    bool // error indication: the last request failed, see 0x0134
	IDLoaded bool // device identification is in 0x0134
}

// DecodeALStatus reads AL status from b (at least ALStatusLen bytes).
func DecodeALStatus(b []byte) ALStatus {
	v := binary.LittleEndian.Uint16(b)
	return ALStatus{State: ALState(v & 0x0F), Error: v&0x10 != 0, IDLoaded: v&0x20 != 0}
}

// Encode writes s into b (at least ALStatusLen bytes).
func (s ALStatus) Encode(b []byte) {
	v := uint16(s.State & 0x0F)
	if s.Error {
		v |= 0x10
	}
	if s.IDLoaded {
		v |= 0x20
	}
	binary.LittleEndian.PutUint16(b, v)
}

// String renders the status as ethercat tools do, e.g. "SAFEOP+ERR".
func (s ALStatus) String() string {
	if s.Error {
		return s.State.String() + "+ERR"
	}
	return s.State.String()
}

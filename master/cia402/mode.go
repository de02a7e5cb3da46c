package cia402

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode is a mode of operation (objects 0x6060 and 0x6061, INT8). Negative
// values are manufacturer specific.
type Mode int8

// Modes of operation defined by IEC 61800-7-201.
const (
	ModeNone                 Mode = 0
	ModeProfilePosition      Mode = 1
	ModeVelocity             Mode = 2
	ModeProfileVelocity      Mode = 3
	ModeProfileTorque        Mode = 4
	ModeHoming               Mode = 6
	ModeInterpolatedPosition Mode = 7
	ModeCSP                  Mode = 8  // cyclic synchronous position
	ModeCSV                  Mode = 9  // cyclic synchronous velocity
	ModeCST                  Mode = 10 // cyclic synchronous torque
)

// String gives the usual abbreviation ("csp", "csv", "cst", "pp", …) or
// the number for a mode without one.
func (m Mode) String() string {
	switch m {
	case ModeNone:
		return "none"
	case ModeProfilePosition:
		return "pp"
	case ModeVelocity:
		return "vl"
	case ModeProfileVelocity:
		return "pv"
	case ModeProfileTorque:
		return "tq"
	case ModeHoming:
		return "hm"
	case ModeInterpolatedPosition:
		return "ip"
	case ModeCSP:
		return "csp"
	case ModeCSV:
		return "csv"
	case ModeCST:
		return "cst"
	}
	return "mode " + strconv.Itoa(int(m))
}

// Cyclic reports whether m is one of the cyclic synchronous modes the
// [Drive] supports (CSP, CSV, CST).
func (m Mode) Cyclic() bool { return m == ModeCSP || m == ModeCSV || m == ModeCST }

// ParseMode parses "csp", "csv" or "cst" (in any case).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "csp":
		return ModeCSP, nil
	case "csv":
		return ModeCSV, nil
	case "cst":
		return ModeCST, nil
	}
	return 0, fmt.Errorf("cia402: mode %q: must be csp, csv or cst", s)
}

// target returns the target object of a cyclic mode and its width.
func (m Mode) target() (index uint16, bits int) {
	switch m {
	case ModeCSP:
		return ObjTargetPosition, 32
	case ModeCSV:
		return ObjTargetVelocity, 32
	case ModeCST:
		return ObjTargetTorque, 16
	}
	return 0, 0
}

// Package state is the one definition of the CiA 402 power drive state
// machine (IEC 61800-7-201, the drive profile of CANopen over EtherCAT):
// its eight states, how the statusword (0x6041) encodes them, and the
// controlword (0x6040) commands that move a drive between them.
//
// Three parts of ecagent speak this language and all take it from here:
// package master/cia402 decodes the statusword and chooses the controlword
// that walks a real drive to operation enabled; package sim encodes
// the statusword of its simulated drive and carries out the commands it
// receives; and the agent exports the state's number as the gauge
// ecagent_drive_state, in shm.EventDriveState and in MQTT events.
//
// It is a leaf package with no project imports on purpose: master/cia402
// imports package master, and sim must not (a simulator that shared
// the master's logic could hide the master's bugs), so the definition
// lives below both of them.
package state

// State is a state of the CiA 402 power drive state machine.
//
// The numbers are an exported encoding, fixed for good: they are the
// value of the gauge ecagent_drive_state, of shm.EventDriveState and of
// the MQTT events' state_number. The zero value, [Unknown], is the
// invalid state: what a statusword outside the standard's coding decodes
// to, and what the simulator reports for a device that is not a drive.
type State uint8

// The states, numbered in the order the standard lists them.
const (
	// Unknown is no state: the statusword matches none of the codings.
	Unknown State = iota
	// NotReadyToSwitchOn: the drive is initialising (self test); it
	// leaves on its own for switch on disabled (transition 1).
	NotReadyToSwitchOn
	// SwitchOnDisabled: initialised, the power stage may not be switched
	// on yet.
	SwitchOnDisabled
	// ReadyToSwitchOn: the power stage may be switched on.
	ReadyToSwitchOn
	// SwitchedOn: the power stage is on, the drive function is disabled.
	SwitchedOn
	// OperationEnabled: the drive follows its targets.
	OperationEnabled
	// QuickStopActive: the drive is stopping with the quick stop ramp.
	QuickStopActive
	// FaultReactionActive: a fault occurred and the drive runs its fault
	// reaction (for example a stop ramp); it goes to fault on its own.
	FaultReactionActive
	// Fault: the drive is disabled after a fault until a fault reset.
	Fault
)

// String names the state as the standard does, in lower case ("operation
// enabled"); Unknown and any number beyond Fault are "unknown".
func (s State) String() string {
	switch s {
	case NotReadyToSwitchOn:
		return "not ready to switch on"
	case SwitchOnDisabled:
		return "switch on disabled"
	case ReadyToSwitchOn:
		return "ready to switch on"
	case SwitchedOn:
		return "switched on"
	case OperationEnabled:
		return "operation enabled"
	case QuickStopActive:
		return "quick stop active"
	case FaultReactionActive:
		return "fault reaction active"
	case Fault:
		return "fault"
	}
	return "unknown"
}

// Faulted reports whether s is fault or fault reaction active.
func (s State) Faulted() bool { return s == Fault || s == FaultReactionActive }

// FromNumber returns the state numbered n in the exported encoding (the
// value of shm.EventDriveState, for example), and false when n numbers
// none: then the state is Unknown.
func FromNumber(n uint64) (State, bool) {
	if n > uint64(Fault) {
		return Unknown, false
	}
	return State(n), true
}

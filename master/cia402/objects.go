package cia402

// Object indexes of the CiA 402 objects the drive helper uses (all
// sub-index 0).
const (
	ObjErrorCode      uint16 = 0x603F // error code, UINT16 (TxPDO)
	ObjControlword    uint16 = 0x6040 // controlword, UINT16 (RxPDO)
	ObjStatusword     uint16 = 0x6041 // statusword, UINT16 (TxPDO)
	ObjModeOfOp       uint16 = 0x6060 // modes of operation, INT8 (RxPDO)
	ObjModeDisplay    uint16 = 0x6061 // modes of operation display, INT8 (TxPDO)
	ObjPositionActual uint16 = 0x6064 // position actual value, INT32 (TxPDO)
	ObjVelocityActual uint16 = 0x606C // velocity actual value, INT32 (TxPDO)
	ObjTargetTorque   uint16 = 0x6071 // target torque, INT16 (RxPDO)
	ObjTorqueActual   uint16 = 0x6077 // torque actual value, INT16 (TxPDO)
	ObjTargetPosition uint16 = 0x607A // target position, INT32 (RxPDO)
	ObjTargetVelocity uint16 = 0x60FF // target velocity, INT32 (RxPDO)
)

// Statusword is object 0x6041. Bits 0-3, 5 and 6 encode the state of the
// drive's state machine (IEC 61800-7-201, table "state coding").
type Statusword uint16

// Statusword bits.
const (
	SWReadyToSwitchOn   Statusword = 1 << 0
	SWSwitchedOn        Statusword = 1 << 1
	SWOperationEnabled  Statusword = 1 << 2
	SWFault             Statusword = 1 << 3
	SWVoltageEnabled    Statusword = 1 << 4
	SWQuickStop         Statusword = 1 << 5 // low while a quick stop is active
	SWSwitchOnDisabled  Statusword = 1 << 6
	SWWarning           Statusword = 1 << 7
	SWRemote            Statusword = 1 << 9
	SWTargetReached     Statusword = 1 << 10
	SWInternalLimitActv Statusword = 1 << 11
)

// State decodes the state machine's state. A pattern the standard does not
// define gives [StateUnknown].
func (s Statusword) State() State {
	switch {
	case s&0x4F == 0x00:
		return StateNotReadyToSwitchOn
	case s&0x4F == 0x40:
		return StateSwitchOnDisabled
	case s&0x6F == 0x21:
		return StateReadyToSwitchOn
	case s&0x6F == 0x23:
		return StateSwitchedOn
	case s&0x6F == 0x27:
		return StateOperationEnabled
	case s&0x6F == 0x07:
		return StateQuickStopActive
	case s&0x4F == 0x0F:
		return StateFaultReactionActive
	case s&0x4F == 0x08:
		return StateFault
	}
	return StateUnknown
}

// State is a state of the CiA 402 power drive state machine.
type State uint8

// The states of the power drive state machine. The zero value is unknown.
const (
	StateUnknown State = iota
	StateNotReadyToSwitchOn
	StateSwitchOnDisabled
	StateReadyToSwitchOn
	StateSwitchedOn
	StateOperationEnabled
	StateQuickStopActive
	StateFaultReactionActive
	StateFault
)

// String names the state as the standard does, in lower case.
func (s State) String() string {
	switch s {
	case StateNotReadyToSwitchOn:
		return "not ready to switch on"
	case StateSwitchOnDisabled:
		return "switch on disabled"
	case StateReadyToSwitchOn:
		return "ready to switch on"
	case StateSwitchedOn:
		return "switched on"
	case StateOperationEnabled:
		return "operation enabled"
	case StateQuickStopActive:
		return "quick stop active"
	case StateFaultReactionActive:
		return "fault reaction active"
	case StateFault:
		return "fault"
	}
	return "unknown"
}

// Faulted reports whether s is fault or fault reaction active.
func (s State) Faulted() bool { return s == StateFault || s == StateFaultReactionActive }

// Controlword is object 0x6040.
type Controlword uint16

// Controlword bits and the device control commands built from them.
const (
	CWSwitchOn        Controlword = 1 << 0
	CWEnableVoltage   Controlword = 1 << 1
	CWQuickStop       Controlword = 1 << 2 // low commands a quick stop
	CWEnableOperation Controlword = 1 << 3
	CWFaultReset      Controlword = 1 << 7
	CWHalt            Controlword = 1 << 8

	// CmdDisableVoltage leads to switch on disabled from any state.
	CmdDisableVoltage Controlword = 0x00
	// CmdShutdown leads to ready to switch on.
	CmdShutdown Controlword = 0x06
	// CmdSwitchOn leads to switched on.
	CmdSwitchOn Controlword = 0x07
	// CmdEnableOperation leads to operation enabled.
	CmdEnableOperation Controlword = 0x0F
	// CmdFaultReset leaves fault on its rising edge (after a word with
	// bit 7 low).
	CmdFaultReset Controlword = 0x80
)

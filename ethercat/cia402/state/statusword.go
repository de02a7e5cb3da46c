package state

// Statusword is object 0x6041. Bits 0–3, 5 and 6 encode the state
// (IEC 61800-7-201, table "state coding"); the others report conditions
// beside it and are ignored by [Statusword.State]:
//
//	state                    mask    value
//	not ready to switch on   0x004F  0x0000
//	switch on disabled       0x004F  0x0040
//	ready to switch on       0x006F  0x0021
//	switched on              0x006F  0x0023
//	operation enabled        0x006F  0x0027
//	quick stop active        0x006F  0x0007
//	fault reaction active    0x004F  0x000F
//	fault                    0x004F  0x0008
//
// Bit 5 (quick stop) matters only in the states where it tells two
// states apart: operation enabled (high) from quick stop active (low).
type Statusword uint16

// Statusword bits.
const (
	SWReadyToSwitchOn  Statusword = 1 << 0
	SWSwitchedOn       Statusword = 1 << 1
	SWOperationEnabled Statusword = 1 << 2
	SWFault            Statusword = 1 << 3
	SWVoltageEnabled   Statusword = 1 << 4
	SWQuickStop        Statusword = 1 << 5 // low while a quick stop is active
	SWSwitchOnDisabled Statusword = 1 << 6
	SWWarning          Statusword = 1 << 7
	SWRemote           Statusword = 1 << 9  // the controlword is processed
	SWTargetReached    Statusword = 1 << 10 // also: a quick stop or halt reached standstill
	SWInternalLimit    Statusword = 1 << 11 // internal limit active
	SWFollowsCommand   Statusword = 1 << 12 // cyclic synchronous modes: the drive follows the target
	SWFollowingError   Statusword = 1 << 13 // cyclic synchronous position: following error
)

// The two masks of the state coding: the states that bit 5 does not tell
// apart are decoded under maskState, the others under maskQuickStopState.
const (
	maskState          Statusword = SWReadyToSwitchOn | SWSwitchedOn | SWOperationEnabled | SWFault | SWSwitchOnDisabled // 0x004F
	maskQuickStopState            = maskState | SWQuickStop                                                              // 0x006F
)

// State decodes the state from the statusword. A pattern the standard
// does not define gives [Unknown].
func (sw Statusword) State() State {
	switch {
	case sw&maskState == 0x00:
		return NotReadyToSwitchOn
	case sw&maskState == 0x40:
		return SwitchOnDisabled
	case sw&maskQuickStopState == 0x21:
		return ReadyToSwitchOn
	case sw&maskQuickStopState == 0x23:
		return SwitchedOn
	case sw&maskQuickStopState == 0x27:
		return OperationEnabled
	case sw&maskQuickStopState == 0x07:
		return QuickStopActive
	case sw&maskState == 0x0F:
		return FaultReactionActive
	case sw&maskState == 0x08:
		return Fault
	}
	return Unknown
}

// Statusword returns the bits that encode s, every other bit clear, so
// that s.Statusword().State() == s. A drive adds the bits it reports beside
// the state (voltage enabled, remote, target reached, ...). Unknown, which
// no coding names, gives 0x0041 (switch on disabled and ready to switch on
// at once), a pattern the standard leaves undefined.
func (s State) Statusword() Statusword {
	switch s {
	case NotReadyToSwitchOn:
		return 0
	case SwitchOnDisabled:
		return SWSwitchOnDisabled
	case ReadyToSwitchOn:
		return SWReadyToSwitchOn | SWQuickStop
	case SwitchedOn:
		return SWReadyToSwitchOn | SWSwitchedOn | SWQuickStop
	case OperationEnabled:
		return SWReadyToSwitchOn | SWSwitchedOn | SWOperationEnabled | SWQuickStop
	case QuickStopActive:
		return SWReadyToSwitchOn | SWSwitchedOn | SWOperationEnabled
	case FaultReactionActive:
		return SWReadyToSwitchOn | SWSwitchedOn | SWOperationEnabled | SWFault
	case Fault:
		return SWFault
	}
	return SWSwitchOnDisabled | SWReadyToSwitchOn
}

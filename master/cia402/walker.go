package cia402

import "github.com/ecagent/ecagent/ethercat/cia402/state"

// Defaults of the [Walker]'s zero fields.
const (
	// DefaultPulseCycles is how many cycles the fault reset bit is held
	// high.
	DefaultPulseCycles = 4
	// DefaultRetryCycles is how many cycles an automatic fault reset waits
	// with bit 7 low before it tries again, when the drive stayed in
	// fault.
	DefaultRetryCycles = 1000
)

// Walker chooses, cycle by cycle, the controlword that walks a drive to
// operation enabled: disable voltage while the drive is not ready or
// reacting to a fault, shutdown (0x06) from switch on disabled, switch on
// (0x07) from ready to switch on, enable operation (0x0F) from switched on
// and in operation enabled, and disable voltage from quick stop active
// (which leads back to switch on disabled). In fault it sends 0x00 and,
// when a reset is requested, a rising edge of the fault reset bit: 0x80
// after at least one 0x00, held for PulseCycles.
//
// The zero value is ready to use. A Walker is not safe for concurrent use.
type Walker struct {
	// SettleCycles is how many cycles the drive must have been in operation
	// enabled before [Step].Live turns true and the target may move.
	SettleCycles int
	// PulseCycles is how long the fault reset bit is held high; 0 means
	// DefaultPulseCycles.
	PulseCycles int
	// RetryCycles is how long bit 7 stays low between two reset attempts
	// in the same fault; 0 means DefaultRetryCycles. The first attempt
	// needs only one cycle of 0x00.
	RetryCycles int

	last     state.Controlword // the word sent in the previous step
	started  bool              // last is valid: at least one step was taken
	phase    int               // cycles the fault reset bit has been in its current level, in fault
	attempts int               // reset edges sent in the current fault
	enabled  int               // consecutive steps in operation enabled
}

// Step is the outcome of one [Walker.Step].
type Step struct {
	// Controlword is the word to send in this cycle.
	Controlword state.Controlword
	// State is the state decoded from the statusword.
	State state.State
	// Live is true once the drive has been in operation enabled for more
	// than SettleCycles steps: the target may follow the profile.
	Live bool
	// ResetEdge is true when this step sends the rising edge of the fault
	// reset bit (a requested reset was carried out).
	ResetEdge bool
}

// Step takes the statusword of the last exchange and whether a fault reset
// is requested, and returns the controlword for this cycle.
func (w *Walker) Step(sw state.Statusword, reset bool) Step {
	st := sw.State()
	out := Step{State: st}
	if st != state.OperationEnabled {
		w.enabled = 0
	}
	if st != state.Fault {
		w.phase, w.attempts = 0, 0
	}
	switch st {
	case state.SwitchOnDisabled:
		out.Controlword = state.CmdShutdown
	case state.ReadyToSwitchOn:
		out.Controlword = state.CmdSwitchOn
	case state.SwitchedOn:
		out.Controlword = state.CmdEnableOperation
	case state.OperationEnabled:
		out.Controlword = state.CmdEnableOperation
		if w.enabled <= w.SettleCycles {
			w.enabled++
		}
		out.Live = w.enabled > w.SettleCycles
	case state.Fault:
		out.Controlword, out.ResetEdge = w.fault(reset)
	default: // not ready, fault reaction, quick stop, unknown
		out.Controlword = state.CmdDisableVoltage
	}
	w.last, w.started = out.Controlword, true
	return out
}

// fault chooses the word in the fault state.
func (w *Walker) fault(reset bool) (state.Controlword, bool) {
	pulse := w.PulseCycles
	if pulse <= 0 {
		pulse = DefaultPulseCycles
	}
	retry := w.RetryCycles
	if retry <= 0 {
		retry = DefaultRetryCycles
	}
	if w.last&state.CWFaultReset != 0 {
		// The pulse is high: hold it, then drop it.
		w.phase++
		if w.phase < pulse {
			return state.CmdFaultReset, false
		}
		w.phase = 0
		return state.CmdDisableVoltage, false
	}
	if w.started && w.last == state.CmdDisableVoltage {
		w.phase++ // cycles already sent low
	} else {
		w.phase = 0 // arriving in fault with another word: send 0x00 first
	}
	need := 1
	if w.attempts > 0 {
		need = retry
	}
	if reset && w.phase >= need {
		w.phase = 0
		w.attempts++
		return state.CmdFaultReset, true
	}
	return state.CmdDisableVoltage, false
}

// Reset forgets the walker's history, as after a restart of the drive.
func (w *Walker) Reset() {
	*w = Walker{SettleCycles: w.SettleCycles, PulseCycles: w.PulseCycles, RetryCycles: w.RetryCycles}
}

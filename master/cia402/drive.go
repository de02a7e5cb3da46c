package cia402

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
)

// Process reads and writes one slave's process data. Bit offsets are
// relative to the slave's inputs (TxPDO data) and outputs (RxPDO data);
// values are little endian, n is 1 to 64 bits. [SlaveImage] adapts the
// master's process image.
type Process interface {
	InputValue(bit, n int) (uint64, error)
	SetOutputValue(bit, n int, v uint64) error
}

// Image is a whole process image addressed per slave, the shape of the
// master's *ProcessImage with S = *master.Slave.
type Image[S any] interface {
	InputValue(s S, bit, n int) (uint64, error)
	SetOutputValue(s S, bit, n int, v uint64) error
}

// SlaveImage returns the [Process] of slave s in img.
func SlaveImage[S any](img Image[S], s S) Process { return slaveImage[S]{img: img, s: s} }

type slaveImage[S any] struct {
	img Image[S]
	s   S
}

func (p slaveImage[S]) InputValue(bit, n int) (uint64, error) { return p.img.InputValue(p.s, bit, n) }
func (p slaveImage[S]) SetOutputValue(bit, n int, v uint64) error {
	return p.img.SetOutputValue(p.s, bit, n, v)
}

// Field is where one object is mapped: Bit is its bit offset within the
// slave's outputs (RxPDO) or inputs (TxPDO), Bits its length.
type Field struct {
	Bit, Bits int
}

// Entries finds the mapped PDO entries of one slave. [EntryFuncs] adapts
// the master's (*Slave).OutputEntry and InputEntry.
type Entries interface {
	// OutputEntry finds an object mapped into an RxPDO.
	OutputEntry(index uint16, sub uint8) (Field, bool)
	// InputEntry finds an object mapped into a TxPDO.
	InputEntry(index uint16, sub uint8) (Field, bool)
}

// EntryFuncs implements [Entries] with two functions. A nil function finds
// nothing.
type EntryFuncs struct {
	Output, Input func(index uint16, sub uint8) (Field, bool)
}

// OutputEntry calls f.Output.
func (f EntryFuncs) OutputEntry(index uint16, sub uint8) (Field, bool) {
	if f.Output == nil {
		return Field{}, false
	}
	return f.Output(index, sub)
}

// InputEntry calls f.Input.
func (f EntryFuncs) InputEntry(index uint16, sub uint8) (Field, bool) {
	if f.Input == nil {
		return Field{}, false
	}
	return f.Input(index, sub)
}

// FaultReset says when a fault is reset.
type FaultReset uint8

// Fault reset policies.
const (
	// ResetManual resets a fault only after [Drive.ResetFault].
	ResetManual FaultReset = iota
	// ResetAuto resets every fault, retrying every
	// [Walker].RetryCycles while the drive stays in fault.
	ResetAuto
)

// String returns "manual" or "auto".
func (r FaultReset) String() string {
	if r == ResetAuto {
		return "auto"
	}
	return "manual"
}

// Config configures a [Drive].
type Config struct {
	// Mode is the cyclic mode: ModeCSP, ModeCSV or ModeCST.
	Mode Mode
	// Profile is the target once the drive is live.
	Profile Profile
	// FaultReset says whether faults are reset automatically.
	FaultReset FaultReset
	// SettleCycles is how many cycles the target is held after operation
	// enabled is reached, before the profile starts.
	SettleCycles int
	// PulseCycles and RetryCycles tune the fault reset (see [Walker]); 0
	// takes the defaults.
	PulseCycles, RetryCycles int
}

// MissingObjectError is an object the drive needs but the slave's PDO
// mapping lacks, or maps with the wrong width.
type MissingObjectError struct {
	Index    uint16
	SubIndex uint8
	Name     string // e.g. "controlword"
	PDO      string // "RxPDO" or "TxPDO"
	Bits     int    // the object's width
	Mapped   int    // the mapped width; 0 when not mapped at all
	Why      string // why it is needed, e.g. "required in csv"
}

// Error renders: cia402: controlword 0x6040:00 (16 bits) is not mapped in
// the RxPDOs: required.
func (e *MissingObjectError) Error() string {
	if e.Mapped != 0 {
		return fmt.Sprintf("cia402: %s 0x%04X:%02X is mapped with %d bits in the %ss, want %d",
			e.Name, e.Index, e.SubIndex, e.Mapped, e.PDO, e.Bits)
	}
	return fmt.Sprintf("cia402: %s 0x%04X:%02X (%d bits) is not mapped in the %ss: %s",
		e.Name, e.Index, e.SubIndex, e.Bits, e.PDO, e.Why)
}

// SDOWrite is a value to write by SDO before the slave goes to OP.
type SDOWrite struct {
	Index    uint16
	SubIndex uint8
	Bits     int
	Value    uint64
}

// EventKind says what a drive [Event] reports.
type EventKind uint8

// Event kinds. The zero value is invalid.
const (
	EventInvalid EventKind = iota
	// EventStateChanged is a change of state not covered by the kinds
	// below.
	EventStateChanged
	// EventFault is the drive entering fault reaction active or fault
	// from a state without a fault; ErrorCode is 0x603F if mapped.
	EventFault
	// EventFaultCleared is the drive leaving the fault states.
	EventFaultCleared
	// EventOperationEnabled is the drive reaching operation enabled.
	EventOperationEnabled
)

// String names the kind in snake case, for logs and MQTT events.
func (k EventKind) String() string {
	switch k {
	case EventStateChanged:
		return "state_changed"
	case EventFault:
		return "fault"
	case EventFaultCleared:
		return "fault_cleared"
	case EventOperationEnabled:
		return "operation_enabled"
	}
	return "invalid"
}

// Event is something that happened to the drive in one cycle.
type Event struct {
	Kind EventKind
	// State is the state after the change, From the one before.
	State, From state.State
	// ErrorCode is object 0x603F when it is mapped and the drive is in a
	// fault state; else 0.
	ErrorCode uint16
}

// Drive runs one CiA 402 drive from the cycle: see [Drive.Cycle]. Cycle
// must be called from one goroutine; ResetFault, State, Actual, Target and
// ErrorCode may be called from any.
type Drive struct {
	io      Process
	mode    Mode
	profile Profile
	auto    bool
	walker  Walker

	controlword, modeOut, target Field
	statusword                   Field
	position, velocity, torque   Field // Bits 0: not mapped
	errorCode, modeDisplay       Field

	prev    state.State
	live    bool
	start   int64 // cycle time when the profile started
	holdPos int32 // CSP: position at enable, the profile's origin

	resetRequest atomic.Bool
	state        atomic.Uint32
	actualPos    atomic.Int32
	actualVel    atomic.Int32
	actualTorque atomic.Int32
	targetValue  atomic.Int64
	errCode      atomic.Uint32
	imageErrors  atomic.Uint64
}

// Bind binds a drive to one slave's process data. Controlword (0x6040) and
// statusword (0x6041) must be mapped, and the mode's target: 0x607A for
// CSP, 0x60FF for CSV, 0x6071 for CST; CSP also needs the position actual
// value 0x6064. The actual values, the error code 0x603F and the mode
// display 0x6061 are optional. When 0x6060 is not mapped the mode must be
// written by SDO before OP: [Drive.SetupWrites] lists it. A missing or
// mis-sized object gives a [*MissingObjectError]. Bind writes the
// controlword 0x00, the mode and a zero target into the outputs.
func Bind(io Process, entries Entries, cfg Config) (*Drive, error) {
	if !cfg.Mode.Cyclic() {
		return nil, fmt.Errorf("cia402: mode %v: must be csp, csv or cst", cfg.Mode)
	}
	if err := cfg.Profile.Validate(); err != nil {
		return nil, err
	}
	if cfg.SettleCycles < 0 {
		return nil, fmt.Errorf("cia402: settle cycles %d: must not be negative", cfg.SettleCycles)
	}
	d := &Drive{
		io: io, mode: cfg.Mode, profile: cfg.Profile, auto: cfg.FaultReset == ResetAuto,
		walker: Walker{SettleCycles: cfg.SettleCycles, PulseCycles: cfg.PulseCycles, RetryCycles: cfg.RetryCycles},
	}
	var errs []error
	find := func(dst *Field, output bool, index uint16, bits int, name, why string) {
		var f Field
		var ok bool
		pdo := "TxPDO"
		if output {
			f, ok = entries.OutputEntry(index, 0)
			pdo = "RxPDO"
		} else {
			f, ok = entries.InputEntry(index, 0)
		}
		switch {
		case ok && f.Bits == bits:
			*dst = f
		case ok:
			errs = append(errs, &MissingObjectError{Index: index, Name: name, PDO: pdo, Bits: bits, Mapped: f.Bits, Why: why})
		case why != "":
			errs = append(errs, &MissingObjectError{Index: index, Name: name, PDO: pdo, Bits: bits, Why: why})
		}
	}
	targetIndex, targetBits := cfg.Mode.target()
	posWhy := ""
	if cfg.Mode == ModeCSP {
		posWhy = "required in csp (the target starts at the actual position)"
	}
	find(&d.controlword, true, ObjControlword, 16, "controlword", "required")
	find(&d.statusword, false, ObjStatusword, 16, "statusword", "required")
	find(&d.target, true, targetIndex, targetBits, targetName(cfg.Mode), "required in "+cfg.Mode.String())
	find(&d.modeOut, true, ObjModeOfOp, 8, "modes of operation", "")
	find(&d.modeDisplay, false, ObjModeDisplay, 8, "modes of operation display", "")
	find(&d.position, false, ObjPositionActual, 32, "position actual value", posWhy)
	find(&d.velocity, false, ObjVelocityActual, 32, "velocity actual value", "")
	find(&d.torque, false, ObjTorqueActual, 16, "torque actual value", "")
	find(&d.errorCode, false, ObjErrorCode, 16, "error code", "")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Check that every field lies inside the slave's data, and start from
	// safe outputs.
	for _, f := range []Field{d.statusword, d.position, d.velocity, d.torque, d.errorCode, d.modeDisplay} {
		if f.Bits == 0 {
			continue
		}
		if _, err := io.InputValue(f.Bit, f.Bits); err != nil {
			return nil, fmt.Errorf("cia402: input at bit %d (%d bits): %w", f.Bit, f.Bits, err)
		}
	}
	for _, w := range []struct {
		f Field
		v uint64
	}{{d.controlword, uint64(state.CmdDisableVoltage)}, {d.target, 0}, {d.modeOut, uint64(uint8(cfg.Mode))}} {
		if w.f.Bits == 0 {
			continue
		}
		if err := io.SetOutputValue(w.f.Bit, w.f.Bits, w.v); err != nil {
			return nil, fmt.Errorf("cia402: output at bit %d (%d bits): %w", w.f.Bit, w.f.Bits, err)
		}
	}
	return d, nil
}

func targetName(m Mode) string {
	switch m {
	case ModeCSP:
		return "target position"
	case ModeCSV:
		return "target velocity"
	}
	return "target torque"
}

// SetupWrites returns the SDO writes the slave needs before OP: the mode
// of operation when 0x6060 is not mapped; nil otherwise.
func (d *Drive) SetupWrites() []SDOWrite {
	if d.modeOut.Bits != 0 {
		return nil
	}
	return []SDOWrite{{Index: ObjModeOfOp, Bits: 8, Value: uint64(uint8(d.mode))}}
}

// Mode returns the drive's mode of operation.
func (d *Drive) Mode() Mode { return d.mode }

// Cycle runs one cycle; call it once per cycle before the exchange, with
// the monotonic time t in nanoseconds. It reads the statusword and actual
// values that the last exchange brought, steps the state machine, and
// writes the controlword, the mode and the target for this exchange:
// while the drive is not live the target is held (at 0 for CSV and CST,
// at the actual position for CSP); once it is live the target follows the
// profile from the time it became live (for CSP, added to the position at
// enable). It returns an event when the drive's state changed. It
// allocates nothing.
func (d *Drive) Cycle(t int64) (Event, bool) {
	sw := state.Statusword(d.read(d.statusword))
	var pos, vel int32
	var torque int16
	if d.position.Bits != 0 {
		pos = int32(d.read(d.position))
	}
	if d.velocity.Bits != 0 {
		vel = int32(d.read(d.velocity))
	}
	if d.torque.Bits != 0 {
		torque = int16(d.read(d.torque))
	}
	var code uint16
	reset := d.auto || d.resetRequest.Load()
	step := d.walker.Step(sw, reset)
	if step.State.Faulted() && d.errorCode.Bits != 0 {
		code = uint16(d.read(d.errorCode))
	}
	if step.ResetEdge || !step.State.Faulted() {
		d.resetRequest.Store(false) // carried out, or nothing to reset
	}

	var target int64
	switch {
	case step.Live:
		if !d.live {
			d.live, d.start = true, t
		}
		v := d.profile.At(time.Duration(t - d.start))
		if d.mode == ModeCSP {
			v += float64(d.holdPos)
		}
		target = saturate(v, d.target.Bits)
	case step.State == state.OperationEnabled: // settling
		d.live = false
		if d.mode == ModeCSP {
			if d.prev != state.OperationEnabled {
				d.holdPos = pos
			}
			target = int64(d.holdPos)
		}
	default:
		d.live = false
		if d.mode == ModeCSP {
			target = int64(pos)
		}
	}

	d.write(d.controlword, uint64(step.Controlword))
	d.write(d.modeOut, uint64(uint8(d.mode)))
	d.write(d.target, uint64(target))

	d.state.Store(uint32(step.State))
	d.actualPos.Store(pos)
	d.actualVel.Store(vel)
	d.actualTorque.Store(int32(torque))
	d.targetValue.Store(target)
	d.errCode.Store(uint32(code))

	from := d.prev
	d.prev = step.State
	if from == step.State {
		return Event{}, false
	}
	ev := Event{Kind: EventStateChanged, State: step.State, From: from, ErrorCode: code}
	switch {
	case step.State.Faulted() && !from.Faulted():
		ev.Kind = EventFault
	case !step.State.Faulted() && from.Faulted():
		ev.Kind = EventFaultCleared
	case step.State == state.OperationEnabled:
		ev.Kind = EventOperationEnabled
	}
	return ev, true
}

// read returns a mapped input field, 0 if the access fails.
func (d *Drive) read(f Field) uint64 {
	v, err := d.io.InputValue(f.Bit, f.Bits)
	if err != nil {
		d.imageErrors.Add(1)
		return 0
	}
	return v
}

// write stores an output field if it is mapped.
func (d *Drive) write(f Field, v uint64) {
	if f.Bits == 0 {
		return
	}
	if err := d.io.SetOutputValue(f.Bit, f.Bits, v); err != nil {
		d.imageErrors.Add(1)
	}
}

// saturate rounds v to an integer that fits a signed field of the given
// width.
func saturate(v float64, bits int) int64 {
	hi := float64(int64(1)<<(bits-1) - 1)
	lo := -hi - 1
	switch {
	case math.IsNaN(v):
		return 0
	case v >= hi:
		return int64(hi)
	case v <= lo:
		return int64(lo)
	}
	return int64(math.Round(v))
}

// ResetFault requests a fault reset: the next cycle in fault sends the
// rising edge of the fault reset bit. A request made while the drive is not
// in a fault state is dropped. Safe for concurrent use.
func (d *Drive) ResetFault() { d.resetRequest.Store(true) }

// State returns the state seen in the last cycle.
func (d *Drive) State() state.State { return state.State(d.state.Load()) }

// Actual returns the actual position, velocity and torque seen in the last
// cycle (0 for objects that are not mapped).
func (d *Drive) Actual() (pos, vel int32, torque int16) {
	return d.actualPos.Load(), d.actualVel.Load(), int16(d.actualTorque.Load())
}

// Target returns the target written in the last cycle, in the mode's
// units.
func (d *Drive) Target() int64 { return d.targetValue.Load() }

// ErrorCode returns object 0x603F as seen in the last cycle while in a
// fault state, else 0.
func (d *Drive) ErrorCode() uint16 { return uint16(d.errCode.Load()) }

// ImageErrors counts process image accesses that failed since Bind (none
// should: Bind checks every field).
func (d *Drive) ImageErrors() uint64 { return d.imageErrors.Load() }

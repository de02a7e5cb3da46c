package sim

import (
	"errors"
	"fmt"
	"math"

	"github.com/ecagent/ecagent/master/cia402/state"
	"github.com/ecagent/ecagent/master/esc"
)

// The simulated servo drive: a CiA 402 (IEC 61800-7-201) device modelled
// on the Kollmorgen AKD. It runs the power state machine on the
// controlword, the cyclic synchronous modes (position 8, velocity 9,
// torque 10) on a simple motor model (drive_motor.go) and reports through
// the statusword, the actual values and the error code, in the process
// image and over SDO. The states, their statusword coding and the
// controlword commands are package master/cia402/state's, the one
// definition the master decodes with too; the transitions the drive makes
// on a command (nextDriveState) are the simulator's own.
//
// Decisions where the profile leaves a choice:
//
//   - The outputs are valid only in OP: in SAFEOP and below the drive does
//     not look at the controlword or the targets, so it stays disabled.
//   - Leaving OP while the power stage is on (switched on, operation
//     enabled, quick stop active) is a communication fault: error code
//     0x8700, fault reaction (ramp to standstill), fault. Leaving OP when
//     ready to switch on goes back to switch on disabled.
//   - Quick stop (option code 2): ramp down with 0x6085, then switch on
//     disabled. Disable operation and shutdown switch the torque off at
//     once (the motor coasts).
//   - Modes: 0x6061 follows 0x6060 for the supported modes; any other
//     value (0 included) leaves the display, and the mode in force, as it
//     was. The drive starts in CSP, so a master that does not map 0x6060
//     runs it in CSP.
//   - Faults: following error in CSP beyond 0x6065 (0x8611); in CSV a
//     target velocity beyond 0x6080 or a step of the target velocity
//     beyond what 0x60C5 allows in one cycle (a cycle counted as at least
//     1 ms), and in any mode an actual speed above 1.2 × 0x6080 (0x8400);
//     leaving OP (0x8700); InjectDriveFault. Each sets 0x603F and the
//     error register 0x1001, queues a CoE emergency, and runs the fault
//     reaction (ramp to standstill) before the state becomes fault. A
//     rising edge of controlword bit 7 in fault clears it unless its cause
//     persists (a CSV target velocity still beyond 0x6080), with an
//     emergency 0x0000 (error reset).

// Kollmorgen's EtherCAT vendor id and the AKD's product code ("AKD").
const (
	kollmorgen = 0x0000006A
	akdProduct = 0x00414B44
)

// chipAKD is the AKD's EtherCAT controller as the simulator models it: an
// ET1100-class ESC (8 FMMUs, 8 SyncManagers, 8 KiB) with two MII ports
// and the distributed clock, whatever the SII's ESC configuration byte
// (0x00 on the real AKD, whose DC category still offers SYNC0).
var chipAKD = chip{
	info: esc.Info{Type: 0x11, Revision: 0x00, Build: 0x0003, FMMUs: 8, SyncManagers: 8,
		RAMSizeKiB: 8, PortDescriptor: 0x0F, Features: 0x00FC},
	siiControl: 0x0040,
	dcAlways:   true,
}

// akdSpec is the simulator's description of an AKD beyond its SII.
func akdSpec() deviceSpec {
	return deviceSpec{name: "AKD", chip: chipAKD, esmDelay: defaultESMDelay, mailboxDelay: defaultMailboxDelay,
		objects: driveObjects, app: newDrive}
}

// ErrNotADrive is matched (errors.Is) by the errors of drive operations on
// a device that is not a simulated drive.
var ErrNotADrive = errors.New("sim: not a drive")

// Modes of operation (0x6060).
const (
	ModeCSP int8 = 8  // cyclic synchronous position
	ModeCSV int8 = 9  // cyclic synchronous velocity
	ModeCST int8 = 10 // cyclic synchronous torque
)

// Error codes (0x603F) the drive raises.
const (
	ErrorCodeFollowing     uint16 = 0x8611 // position following error
	ErrorCodeVelocity      uint16 = 0x8400 // velocity beyond the limits
	ErrorCodeCommunication uint16 = 0x8700 // the master left OP while the power stage was on
)

// nextDriveState returns the state the controlword cw commands in state
// s (CiA 402 transitions 2–12 and 15; the automatic ones, 1, 13, 14 and
// the end of a quick stop, are the drive's). resetEdge says bit 7 rose
// since the last controlword; canReset that the fault's cause is gone.
func nextDriveState(s state.State, cw state.Controlword, resetEdge, canReset bool) state.State {
	switch s {
	case state.Fault:
		if resetEdge && canReset {
			return state.SwitchOnDisabled
		}
		return s
	case state.NotReadyToSwitchOn, state.FaultReactionActive:
		return s
	}
	if cw&state.CWFaultReset != 0 {
		return s // fault reset outside fault: no command
	}
	switch {
	case cw&state.CWEnableVoltage == 0: // disable voltage: 7, 9, 10, 12
		return state.SwitchOnDisabled
	case cw&state.CWQuickStop == 0: // quick stop: 7, 10, 11
		switch s {
		case state.ReadyToSwitchOn, state.SwitchedOn:
			return state.SwitchOnDisabled
		case state.OperationEnabled:
			return state.QuickStopActive
		}
		return s
	case cw&state.CWSwitchOn == 0: // shutdown: 2, 6, 8
		switch s {
		case state.SwitchOnDisabled, state.SwitchedOn, state.OperationEnabled:
			return state.ReadyToSwitchOn
		}
		return s
	case cw&state.CWEnableOperation == 0: // switch on (3), disable operation (5)
		switch s {
		case state.ReadyToSwitchOn, state.OperationEnabled:
			return state.SwitchedOn
		}
		return s
	default: // enable operation: 4, or switch on and enable (3+4)
		switch s {
		case state.ReadyToSwitchOn, state.SwitchedOn:
			return state.OperationEnabled
		}
		return s
	}
}

// stateBits returns the statusword bits that encode state s, plus voltage
// enabled (bit 4), which the simulated drive reports in every state but
// not ready to switch on.
func stateBits(s state.State) state.Statusword {
	sw := s.Statusword()
	if s != state.NotReadyToSwitchOn {
		sw |= state.SWVoltageEnabled
	}
	return sw
}

// drive is the application of a simulated CiA 402 drive.
type drive struct {
	d     *Device
	state state.State

	// What the master commands (from the outputs, in OP only).
	controlword    state.Controlword
	resetEdge      bool // controlword bit 7 rose in the last outputs
	mode           int8 // mode in force, shown in 0x6061
	targetPosition int32
	targetVelocity int32 // counts/s
	targetTorque   int16 // per mille
	torqueOffset   int16 // per mille
	maxTorquePD    int32 // mapped 0x6072, or -1

	prevTargetPosition int32
	prevTargetVelocity int32
	fresh              bool // first cycle following the targets: no previous ones

	errorCode     uint16
	errorRegister uint8
	stickyCause   bool // the fault's cause (CSV target beyond 0x6080) persists

	motor       motor
	ramp        float64 // rad/s, velocity reference of a quick stop or fault reaction
	velocityFF  float64 // rad/s, CSP feed forward
	following   int32   // counts, target − actual in CSP
	lastNow     int64
	started     bool
	onSync0     bool   // the last call counted SYNC0 pulses
	pulses      uint64 // SYNC0 pulses at the last call
	carry       int64  // ns of loop time not yet simulated
	wasOP       bool
	statusword  uint16
	limitActive bool
}

// newDrive builds the drive application of d. It starts in switch on
// disabled: the automatic transition 1 out of not ready to switch on (the
// drive's self test) is over by the time a master can see the device, as
// a real drive has booted before its EtherCAT controller answers.
func newDrive(d *Device) application {
	dr := &drive{d: d, state: state.SwitchOnDisabled, mode: ModeCSP, maxTorquePD: -1}
	dr.writeInputs()
	return dr
}

// param returns a parameter from the object dictionary.
func (dr *drive) param(index uint16, def uint32) uint32 {
	if dr.d.mbx == nil {
		return def
	}
	return dr.d.mbx.od.paramU32(index, def)
}

// maxTorque returns the torque limit in N·m.
func (dr *drive) maxTorque() float64 {
	pm := int64(dr.param(objMaxTorque, defaultMaxTorque))
	if dr.maxTorquePD >= 0 {
		pm = int64(dr.maxTorquePD)
	}
	return float64(pm) / 1000 * ratedTorque
}

// maxSpeed returns the max motor speed (0x6080) in rad/s.
func (dr *drive) maxSpeed() float64 {
	return rpmToRadPerSec(float64(dr.param(objMaxMotorSpeed, defaultMaxMotorSpeed)))
}

// processData runs the drive for the time since the last call: it takes
// the outputs (in OP), applies the controlword, runs the control loops
// and the motor, checks the limits and writes the inputs.
func (dr *drive) processData(now int64) {
	elapsed := dr.elapsed(now)
	dr.checkCommunication()
	if dr.wasOP {
		dr.readOutputs()
		dr.applyControlword()
	}
	dr.checkTargets(elapsed)
	dr.run(elapsed)
	dr.checkActuals()
	dr.writeInputs()
}

// elapsed returns the time to simulate at segment time now: the SYNC0
// cycles since the last call while SYNC0 runs (the drive's loops follow
// the distributed clock, whatever the frames' jitter), else the segment
// time since the last call; at most maxElapsed.
func (dr *drive) elapsed(now int64) int64 {
	var el int64
	if dr.started {
		el = now - dr.lastNow
	}
	dr.started, dr.lastNow = true, now
	pulses := dr.d.sync0Pulses(now)
	cycle := int64(dr.d.sync.cycle0)
	if pulses > 0 && cycle > 0 {
		if dr.onSync0 {
			el = int64(pulses-min(dr.pulses, pulses)) * cycle
		}
		dr.onSync0, dr.pulses = true, pulses
	} else {
		dr.onSync0 = false
	}
	return min(max(el, 0), maxElapsed)
}

// checkCommunication notices the master leaving OP.
func (dr *drive) checkCommunication() {
	op := dr.d.esm.state == esc.StateOp
	if dr.wasOP && !op {
		switch dr.state {
		case state.SwitchedOn, state.OperationEnabled, state.QuickStopActive:
			dr.raise(ErrorCodeCommunication, false)
		case state.ReadyToSwitchOn:
			dr.state = state.SwitchOnDisabled
		}
	}
	dr.wasOP = op
}

// readOutputs takes the objects the outputs map.
func (dr *drive) readOutputs() {
	pd := &dr.d.pd
	prevCW := dr.controlword
	dr.maxTorquePD = -1
	for k := range pd.entries {
		e := &pd.entries[k]
		if !e.out || e.index == 0 {
			continue
		}
		v := dr.d.readBits(dr.d.smArea(e.sm)*8+e.bit, e.bits)
		switch {
		case e.index == objControlword:
			dr.controlword = state.Controlword(v)
		case e.index == objModesOfOperation:
			if m := int8(v); m == ModeCSP || m == ModeCSV || m == ModeCST {
				if m != dr.mode {
					dr.fresh = true
				}
				dr.mode = m
			}
		case e.index == objTargetPosition, e.index == objInterpolationData && e.sub == 1:
			dr.targetPosition = int32(v)
		case e.index == objTargetVelocity:
			dr.targetVelocity = int32(v)
		case e.index == objTargetTorque:
			dr.targetTorque = int16(v)
		case e.index == objTorqueOffset:
			dr.torqueOffset = int16(v)
		case e.index == objMaxTorque:
			dr.maxTorquePD = int32(uint16(v))
		}
	}
	dr.resetEdge = prevCW&state.CWFaultReset == 0 && dr.controlword&state.CWFaultReset != 0
}

// applyControlword carries out the command in the controlword.
func (dr *drive) applyControlword() {
	canReset := !dr.stickyCause || dr.velocityTargetOK()
	next := nextDriveState(dr.state, dr.controlword, dr.resetEdge, canReset)
	dr.resetEdge = false
	if next == dr.state {
		return
	}
	switch {
	case dr.state == state.Fault:
		dr.clearFault()
	case next == state.OperationEnabled:
		dr.fresh = true
		dr.motor.integral = 0
	case next == state.QuickStopActive:
		dr.ramp = dr.motor.velocity
	}
	dr.state = next
}

// velocityTargetOK reports whether the target velocity is within 0x6080.
func (dr *drive) velocityTargetOK() bool {
	return math.Abs(float64(dr.targetVelocity)/countsPerRad) <= dr.maxSpeed()
}

// checkTargets looks for targets that fault the drive before it moves:
// in CSV a target velocity beyond 0x6080 or a step beyond 0x60C5 for one
// cycle.
func (dr *drive) checkTargets(elapsed int64) {
	if dr.state != state.OperationEnabled {
		return
	}
	if dr.fresh {
		dr.prevTargetPosition = dr.targetPosition
		dr.prevTargetVelocity = dr.motor.actualVelocity()
		dr.velocityFF = 0
	}
	switch dr.mode {
	case ModeCSV:
		if !dr.velocityTargetOK() {
			dr.raise(ErrorCodeVelocity, true)
			return
		}
		cycle := float64(max(elapsed, 1_000_000)) / 1e9
		step := math.Abs(float64(dr.targetVelocity) - float64(dr.prevTargetVelocity))
		if step > float64(dr.param(objMaxAcceleration, defaultMaxAcceleration))*cycle {
			dr.raise(ErrorCodeVelocity, false)
			return
		}
	case ModeCSP:
		if elapsed == 0 && !dr.fresh {
			return // the feed forward spans the time the motor moves
		}
		if !dr.fresh {
			delta := float64(dr.targetPosition - dr.prevTargetPosition)
			dr.velocityFF = delta / countsPerRad / (float64(elapsed) / 1e9)
		}
	}
	dr.prevTargetPosition, dr.prevTargetVelocity = dr.targetPosition, dr.targetVelocity
	dr.fresh = false
}

// run simulates elapsed ns of control loops and motor.
func (dr *drive) run(elapsed int64) {
	total := dr.carry + elapsed
	steps := total / loopPeriod
	dr.carry = total % loopPeriod
	cmd := loopCommand{maxTorque: dr.maxTorque()}
	switch dr.state {
	case state.OperationEnabled:
		cmd.enabled = true
		cmd.offset = float64(dr.torqueOffset) / 1000 * ratedTorque
		switch dr.mode {
		case ModeCST:
			cmd.torqueOnly = true
			cmd.torque = float64(dr.targetTorque) / 1000 * ratedTorque
		case ModeCSV:
			cmd.velocity = float64(dr.targetVelocity) / countsPerRad
		case ModeCSP:
			cmd.positionLoop = true
			// The target as a continuous position near the motor's,
			// so that the int32 wrap does not make a jump.
			diff := float64(dr.targetPosition - dr.motor.actualPosition())
			cmd.position = math.Floor(dr.motor.position) + diff
			cmd.velocityFF = dr.velocityFF
		}
	case state.QuickStopActive, state.FaultReactionActive:
		cmd.enabled = true
	}
	limited := false
	decel := float64(dr.param(objQuickStopDecel, defaultQuickStopDecel)) / countsPerRad * (loopPeriod / 1e9)
	for range steps {
		ramping := dr.state == state.QuickStopActive || dr.state == state.FaultReactionActive
		if ramping {
			if math.Abs(dr.ramp) <= decel {
				dr.ramp = 0
			} else {
				dr.ramp -= math.Copysign(decel, dr.ramp)
			}
			cmd.velocity = dr.ramp
		}
		dr.motor.step(&cmd)
		limited = limited || dr.motor.limited
		if ramping && dr.ramp == 0 && math.Abs(dr.motor.velocity) < stoppedBelow {
			dr.rampDone()
			cmd.enabled = false
		}
	}
	if steps > 0 {
		dr.limitActive = limited
	}
	if dr.state == state.OperationEnabled && dr.mode == ModeCSP {
		dr.following = dr.targetPosition - dr.motor.actualPosition()
	} else {
		dr.following = 0
	}
}

// rampDone ends a quick stop (to switch on disabled) or a fault reaction
// (to fault) once the motor stands still.
func (dr *drive) rampDone() {
	if dr.state == state.QuickStopActive {
		dr.state = state.SwitchOnDisabled
	} else {
		dr.state = state.Fault
	}
}

// checkActuals looks for actual values that fault the drive: the
// following error in CSP, overspeed in any mode.
func (dr *drive) checkActuals() {
	if dr.state != state.OperationEnabled && dr.state != state.QuickStopActive {
		return
	}
	if math.Abs(dr.motor.velocity) > overspeedFactor*dr.maxSpeed() {
		dr.raise(ErrorCodeVelocity, false)
		return
	}
	window := dr.param(objFollowingWindow, defaultFollowingWindow)
	if dr.state == state.OperationEnabled && dr.mode == ModeCSP && window != math.MaxUint32 &&
		uint32(abs32(dr.following)) > window {
		dr.raise(ErrorCodeFollowing, false)
	}
}

func abs32(v int32) int64 { return max(int64(v), -int64(v)) }

// raise faults the drive with error code code: 0x603F and the error
// register are set, an emergency is queued, and the fault reaction ramps
// the motor to standstill. sticky says the cause persists until the
// target velocity is back within 0x6080.
func (dr *drive) raise(code uint16, sticky bool) {
	if dr.state == state.Fault || dr.state == state.FaultReactionActive {
		return
	}
	dr.errorCode, dr.stickyCause = code, sticky
	dr.errorRegister = 0x01 // generic error
	if code&0xFF00 == 0x8700 || code&0xFF00 == 0x8100 {
		dr.errorRegister |= 0x10 // communication error
	}
	dr.setErrorRegister()
	dr.state = state.FaultReactionActive
	dr.ramp = dr.motor.velocity
	dr.emergency(code, dr.errorRegister)
}

// clearFault ends a fault after a fault reset.
func (dr *drive) clearFault() {
	dr.errorCode, dr.errorRegister, dr.stickyCause = 0, 0, false
	dr.setErrorRegister()
	dr.emergency(0x0000, 0) // error reset
}

func (dr *drive) setErrorRegister() {
	if dr.d.mbx == nil {
		return
	}
	if o := dr.d.mbx.od.find(objErrorRegister); o != nil {
		if e := o.entry(0); e != nil && len(e.value) == 1 {
			e.value[0] = dr.errorRegister
		}
	}
}

// emergency queues a CoE emergency message for the master (dropped, and
// counted by the mailbox, when its queue is full).
func (dr *drive) emergency(code uint16, reg uint8) {
	if dr.d.mbx != nil {
		dr.d.mbx.emergency(code, reg, [5]byte{})
	}
}

// status returns the statusword.
func (dr *drive) status() uint16 {
	sw := stateBits(dr.state)
	if dr.wasOP {
		sw |= state.SWRemote
	}
	if dr.limitActive && (dr.state == state.OperationEnabled || dr.state == state.QuickStopActive) {
		sw |= state.SWInternalLimit
	}
	switch dr.state {
	case state.OperationEnabled:
		sw |= state.SWFollowsCommand
		if dr.targetReached() {
			sw |= state.SWTargetReached
		}
	case state.QuickStopActive:
		if math.Abs(dr.motor.velocity) < stoppedBelow {
			sw |= state.SWTargetReached
		}
	case state.Fault, state.FaultReactionActive:
		if dr.errorCode == ErrorCodeFollowing {
			sw |= state.SWFollowingError
		}
	}
	return uint16(sw)
}

// targetReached reports whether the motor is at the target of the mode:
// the position within 1/16 of the following error window, the velocity
// within 1 % of 0x6080, the torque within 1 % of the rated torque.
func (dr *drive) targetReached() bool {
	switch dr.mode {
	case ModeCSP:
		return uint32(abs32(dr.following)) <= dr.param(objFollowingWindow, defaultFollowingWindow)/16
	case ModeCSV:
		return math.Abs(dr.motor.velocity-float64(dr.targetVelocity)/countsPerRad) <= dr.maxSpeed()/100
	case ModeCST:
		return math.Abs(float64(dr.motor.actualTorque())-float64(dr.targetTorque)) <= 10
	}
	return false
}

// writeInputs writes the objects the inputs map.
func (dr *drive) writeInputs() {
	dr.statusword = dr.status()
	pd := &dr.d.pd
	for k := range pd.entries {
		e := &pd.entries[k]
		if e.out || e.index == 0 {
			continue
		}
		var v uint64
		switch e.index {
		case objStatusword:
			v = uint64(dr.statusword)
		case objModesDisplay:
			v = uint64(uint8(dr.mode))
		case objPositionActual, objPositionInternal:
			v = uint64(uint32(dr.motor.actualPosition()))
		case objVelocityActual:
			v = uint64(uint32(dr.motor.actualVelocity()))
		case objTorqueActual:
			v = uint64(uint16(dr.motor.actualTorque()))
		case objErrorCode:
			v = uint64(dr.errorCode)
		case objFollowingErrorValue:
			v = uint64(uint32(dr.following))
		default:
			continue
		}
		dr.d.putBits(dr.d.smArea(e.sm)*8+e.bit, e.bits, v)
	}
}

// readBits returns n (≤ 64) bits at physical bit address at, least
// significant bit first.
func (d *Device) readBits(at, n int) uint64 {
	var v uint64
	for k := range min(n, 64) {
		b := at + k
		if b/8 >= len(d.mem.b) {
			break
		}
		if d.mem.b[b/8]&(1<<(b%8)) != 0 {
			v |= 1 << k
		}
	}
	return v
}

// theDrive returns d's drive application, or nil.
func (d *Device) theDrive() *drive {
	dr, _ := d.app.(*drive)
	return dr
}

// DriveStatus is a snapshot of a simulated drive.
type DriveStatus struct {
	State       state.State
	Statusword  uint16 // 0x6041 as the master reads it
	Controlword uint16 // 0x6040 as the drive last took it
	Mode        int8   // modes of operation display, 0x6061
	ErrorCode   uint16 // 0x603F
	Position    int32  // counts, 0x6064 (2^20 per revolution)
	Velocity    int32  // counts/s, 0x606C
	Torque      int16  // per mille of the rated torque, 0x6077
	// FollowingError is target minus actual position in CSP (0x60F4),
	// else 0.
	FollowingError int32
}

// Drive returns the state of the device's drive, and false when the
// device is not a simulated drive.
func (d *Device) Drive() (DriveStatus, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	dr := d.theDrive()
	if dr == nil {
		return DriveStatus{}, false
	}
	before := dr.state
	if dr.checkCommunication(); dr.state != before {
		dr.writeInputs()
	}
	return DriveStatus{
		State: dr.state, Statusword: dr.status(), Controlword: uint16(dr.controlword), Mode: dr.mode,
		ErrorCode: dr.errorCode, Position: dr.motor.actualPosition(), Velocity: dr.motor.actualVelocity(),
		Torque: dr.motor.actualTorque(), FollowingError: dr.following,
	}, true
}

// DriveState returns the CiA 402 state of the device's drive, or
// state.Unknown for a device that is not a simulated drive.
func (d *Device) DriveState() state.State {
	s, _ := d.Drive()
	return s.State
}

// DriveActual returns the drive's actual position (counts, 2^20 per
// revolution), velocity (counts/s) and torque (per mille of the rated
// torque), as 0x6064, 0x606C and 0x6077 show them; zeros for a device
// that is not a simulated drive.
func (d *Device) DriveActual() (position int32, velocity int32, torque int16) {
	s, _ := d.Drive()
	return s.Position, s.Velocity, s.Torque
}

// InjectDriveFault faults the device's drive with error code code, as an
// internal fault of the drive would: 0x603F, the fault bit, an emergency
// and the fault reaction follow. A fault reset clears it. It fails with
// ErrNotADrive for a device that is not a simulated drive, and does
// nothing to a drive already in fault or fault reaction.
func (d *Device) InjectDriveFault(code uint16) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	dr := d.theDrive()
	if dr == nil {
		return fmt.Errorf("%w: %s", ErrNotADrive, d.name)
	}
	dr.raise(code, false)
	dr.writeInputs()
	return nil
}

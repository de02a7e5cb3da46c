package sim

import (
	"errors"
	"math"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/esc"
)

// The simulated servo drive: a CiA 402 (IEC 61800-7-201) device modelled
// on the Kollmorgen AKD. It runs the power state machine on the
// controlword, the cyclic synchronous modes (position 8, velocity 9,
// torque 10) on a simple motor model (drive_motor.go) and reports through
// the statusword, the actual values and the error code, in the process
// image and over SDO. The states, their statusword coding and the
// controlword commands are package ethercat/cia402/state's, the one
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
//
// This file holds the drive's definitions, its state machine and its
// control loops; its process data is in drive_pdo.go, its faults in
// drive_faults.go, its exported view in drive_api.go and its object
// dictionary in drive_objects.go.

// Kollmorgen's EtherCAT vendor id and the AKD's product code ("AKD").
const (
	kollmorgen = 0x0000006A
	akdProduct = 0x00414B44
)

// chipAKD is the AKD's EtherCAT controller as the simulator models it: an
// ESC with 8 FMMUs, 8 SyncManagers and 8 KiB, two MII ports and the
// distributed clock, whatever the SII's ESC configuration byte (0x00 on
// the real AKD, whose DC category still offers SYNC0). Its EEPROM is
// emulated by the drive's processor: 0x0502 reads 0x0020 (emulation, bit
// 5; 4-byte reads, bit 6 clear), and a command is done within the frame
// that issued it (the real AKD is never seen busy). DL control 0x0102
// powers up as 0x07 (RX FIFO size only). The information block is the
// real AKD's (issue 37): type 0x04, revision 0x02, features 0x0184; its
// build and its FMMU, SyncManager and RAM counts are not known and stay
// an ET1100's. PDI control and ESC configuration read 0x08/0x0C whatever
// SII word 0 holds (0x0009 in the real image): the drive configures its
// controller itself.
var chipAKD = chip{
	info: esc.Info{Type: 0x04, Revision: 0x02, Build: 0x0003, FMMUs: 8, SyncManagers: 8,
		RAMSizeKiB: 8, PortDescriptor: 0x0F, Features: 0x0184},
	siiControl: esc.SIIEmulation,
	dlControl:  [4]byte{2: 0x07},
	dcAlways:   true,
	ownConfig:  true,
	config:     [2]byte{0x08, 0x0C},
}

// akdSpec is the simulator's description of an AKD beyond its SII.
func akdSpec() deviceSpec {
	return deviceSpec{name: "AKD", chip: chipAKD, esmDelay: defaultESMDelay, mailboxDelay: defaultMailboxDelay,
		fw: fwAKD, objects: func(od *objectDictionary) { driveObjects(od); akdShipped(od) }, app: newDrive}
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

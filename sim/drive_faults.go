package sim

import (
	"math"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/esc"
)

// The drive's faults: the checks of communication, targets and actual
// values that raise them, and raising and clearing a fault (0x603F, the
// error register 0x1001, the CoE emergency).

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

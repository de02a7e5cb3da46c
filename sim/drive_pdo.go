package sim

import (
	"math"

	"github.com/ecagent/ecagent/ethercat/bitfield"
	"github.com/ecagent/ecagent/ethercat/cia402/state"
)

// The drive's process data: the outputs it takes (controlword, mode,
// targets), the inputs it writes (statusword, actual values, error code)
// and the statusword bits beyond the state.

// readOutputs takes the objects the outputs map.
func (dr *drive) readOutputs() {
	pd := &dr.d.pd
	prevCW := dr.controlword
	dr.maxTorquePD = -1
	for k := range pd.entries {
		e := &pd.entries[k]
		if !e.out || e.index == 0 || e.again {
			continue
		}
		v := bitfield.Value(dr.d.mem.b[:], dr.d.smArea(e.sm)*8+e.bit, e.bits)
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
	// An edge an SDO write of the controlword made counts too.
	dr.resetEdge = dr.resetEdge || prevCW&state.CWFaultReset == 0 && dr.controlword&state.CWFaultReset != 0
}

// sdoWritten takes an output object written over SDO as readOutputs takes
// a mapped one: where an RxPDO maps the object, the master's next outputs
// replace the value, as on a real drive. The drive acts on the
// controlword in OP only, as on its outputs; a valid mode takes effect at
// once and shows in 0x6061.
func (dr *drive) sdoWritten(index uint16, sub uint8, b []byte) {
	var v uint64
	for i, x := range b[:min(len(b), 8)] {
		v |= uint64(x) << (8 * i)
	}
	switch {
	case index == objControlword:
		cw := state.Controlword(v)
		if dr.wasOP && dr.controlword&state.CWFaultReset == 0 && cw&state.CWFaultReset != 0 {
			dr.resetEdge = true
		}
		dr.controlword = cw
	case index == objModesOfOperation:
		if m := int8(v); m == ModeCSP || m == ModeCSV || m == ModeCST {
			if m != dr.mode {
				dr.fresh = true
			}
			dr.mode = m
			dr.writeInputs()
		}
	case index == objTargetPosition, index == objInterpolationData && sub == 1:
		dr.targetPosition = int32(v)
	case index == objTargetVelocity:
		dr.targetVelocity = int32(v)
	case index == objTargetTorque:
		dr.targetTorque = int16(v)
	case index == objTorqueOffset:
		dr.torqueOffset = int16(v)
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

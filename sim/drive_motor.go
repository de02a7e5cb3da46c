package sim

import "math"

// The simulated motor and load: a rigid inertia with viscous friction
// driven by the torque the drive's control loops command, integrated in
// fixed steps of the drive's control loop period. Position is kept in
// encoder counts, velocity in rad/s, torque in N·m.
const (
	countsPerRev = 1 << 20 // encoder counts per motor revolution (0x608F)
	countsPerRad = countsPerRev / (2 * math.Pi)

	ratedTorque = 1.0    // N·m, the 1000 ‰ of 0x6071/0x6077 (0x6076 in mN·m)
	inertia     = 2.0e-4 // kg·m², motor and load
	friction    = 1.0e-4 // N·m·s/rad, viscous

	// loopPeriod is the period of the drive's velocity and position
	// loops (8 kHz); the motor is integrated in steps of this length.
	loopPeriod = 125_000 // ns
	// maxElapsed caps the time one processData call simulates: after a
	// longer pause in the process data the drive picks up as if only
	// this much time had passed.
	maxElapsed = 100_000_000 // ns

	// Velocity loop: PI, normalised to the inertia, with a double pole
	// at -velocityGain/2 (time constant 3.3 ms).
	velocityGain    = 600.0                           // 1/s
	velocityIntGain = velocityGain * velocityGain / 4 // 1/s²
	// Position loop: P on top of the velocity loop, with the target's
	// rate of change fed forward.
	positionGain = 100.0 // 1/s

	// stoppedBelow is the speed below which a ramp to standstill counts
	// as done (rad/s, about 1 rpm).
	stoppedBelow = 0.1
	// overspeedFactor times the max motor speed trips the overspeed
	// fault in any mode.
	overspeedFactor = 1.2
)

// motor is the mechanical state and the drive's control loop state.
type motor struct {
	position float64 // counts, kept within ±2^40 (wraps like an int32)
	velocity float64 // rad/s
	torque   float64 // N·m, what the power stage applies
	integral float64 // velocity loop integrator, rad/s² (torque/inertia)
	limited  bool    // the last step hit the torque limit
}

// loopCommand says what the control loops do during one step.
type loopCommand struct {
	enabled bool // the power stage drives the motor; else it coasts
	// Exactly one of the following is used, by mode.
	torqueOnly   bool    // torque = torque
	torque       float64 // N·m, for torqueOnly (plus offset in any mode)
	positionLoop bool    // CSP: follow position with feed forward velocityFF
	position     float64 // counts, for positionLoop
	velocityFF   float64 // rad/s, for positionLoop
	velocity     float64 // rad/s, reference of the velocity loop (CSV, ramps)
	offset       float64 // N·m, torque feed forward
	maxTorque    float64 // N·m, > 0
}

// step advances the motor by one loop period under cmd.
func (m *motor) step(cmd *loopCommand) {
	const h = loopPeriod / 1e9
	var tq float64
	m.limited = false
	switch {
	case !cmd.enabled:
		m.integral = 0
	case cmd.torqueOnly:
		tq = cmd.torque + cmd.offset
	default:
		ref := cmd.velocity
		if cmd.positionLoop {
			ref = cmd.velocityFF + positionGain*(cmd.position-m.position)/countsPerRad
		}
		e := ref - m.velocity
		want := inertia*(velocityGain*e+m.integral) + cmd.offset
		// Conditional integration: the integrator holds while the
		// output saturates in the direction it would push.
		if math.Abs(want) < cmd.maxTorque || (want > 0) != (e > 0) {
			m.integral += velocityIntGain * e * h
		}
		tq = want
	}
	if cmd.enabled {
		if tq > cmd.maxTorque {
			tq, m.limited = cmd.maxTorque, true
		} else if tq < -cmd.maxTorque {
			tq, m.limited = -cmd.maxTorque, true
		}
	}
	m.torque = tq
	acc := (tq - friction*m.velocity) / inertia
	m.position += (m.velocity*h + acc*h*h/2) * countsPerRad
	m.velocity += acc * h
	if math.Abs(m.position) > 1<<40 {
		m.position -= math.Copysign(1<<40, m.position) // a multiple of 2^32: int32 value unchanged
	}
}

// actualPosition returns the position in counts as 0x6064 shows it.
func (m *motor) actualPosition() int32 {
	return int32(int64(math.Floor(m.position)))
}

// actualVelocity returns the velocity in counts/s as 0x606C shows it.
func (m *motor) actualVelocity() int32 {
	return int32(clampFloat(math.Round(m.velocity*countsPerRad), math.MinInt32, math.MaxInt32))
}

// actualTorque returns the torque in per mille of the rated torque, as
// 0x6077 shows it.
func (m *motor) actualTorque() int16 {
	return int16(clampFloat(math.Round(m.torque/ratedTorque*1000), math.MinInt16, math.MaxInt16))
}

func clampFloat(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// rpmToRadPerSec converts a speed in revolutions per minute.
func rpmToRadPerSec(rpm float64) float64 { return rpm * 2 * math.Pi / 60 }

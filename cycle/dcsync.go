package cycle

// dcSync is the controller that keeps the master's cycle on the
// distributed-clock reference: each cycle it takes the reference clock's
// system time as the cyclic frame read it (FRMW of 0x0910) and moves the
// next deadline so that the frame passes the reference at the start of a
// DC cycle (system time a multiple of the period; SYNC0 then fires the
// configured shift later). Without it the slaves' SYNC0 and the master's
// frames drift apart by the rate difference of the two clocks (tens of
// ppm on real hardware) until outputs arrive after SYNC0.
//
// It is a PI controller on the phase error, in integer nanoseconds: the
// proportional part pulls the phase in within some ten cycles, the
// integral part takes up the constant rate difference. Gains: Kp = 13/128
// ≈ 0.1 and Ki = 1/256; with the plant e(n+1) = e(n) + u(n) + drift the
// closed loop's poles lie at |z| ≈ 0.95, just under critical damping, so
// a step settles without overshoot worth noting and host wake-up noise is
// passed on to the schedule at a tenth of its size.
type dcSync struct {
	period   int64 // DC cycle time, ns
	maxStep  int64 // largest correction applied in one cycle, ns
	integral int64 // sum of the errors since lock, ns
	locked   bool  // the first error has been taken out in one step
}

// Controller tuning, see dcSync.
const (
	dcKpNum       = 13
	dcKpDen       = 128
	dcKiDen       = 256
	dcStepDivisor = 20 // maxStep = period / dcStepDivisor
)

func newDCSync(period int64) dcSync {
	return dcSync{period: period, maxStep: max(period/dcStepDivisor, 1)}
}

// phaseError returns where in its DC cycle the reference time t lies,
// wrapped into [−period/2, period/2): positive when the frame passed the
// reference after the cycle start (the master is late).
func (c *dcSync) phaseError(t uint64) int64 {
	ph := int64(t % uint64(c.period))
	if ph >= c.period-c.period/2 {
		ph -= c.period
	}
	return ph
}

// update takes the reference time of this cycle's frame and returns the
// error and the correction to add to the next deadline (ns). The first
// error, and any error beyond a quarter period (the reference clock
// jumped, or the master lost many cycles), is taken out at once and the
// integral restarts; otherwise the PI step is bounded by maxStep so that
// one noisy reading cannot throw the schedule.
func (c *dcSync) update(t uint64) (errNS, correction int64) {
	e := c.phaseError(t)
	if !c.locked || abs64(e) > c.period/4 {
		c.locked = true
		c.integral = 0
		return e, -e
	}
	c.integral += e
	// Anti-windup: the integral alone never asks for more than maxStep.
	lim := c.maxStep * dcKiDen
	c.integral = min(max(c.integral, -lim), lim)
	u := -(e*dcKpNum)/dcKpDen - c.integral/dcKiDen
	return e, min(max(u, -c.maxStep), c.maxStep)
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

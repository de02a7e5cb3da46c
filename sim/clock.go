package sim

import (
	"encoding/binary"
	"math/bits"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/sim/faultcmd"
)

// Propagation model of the simulated line, in nanoseconds. A frame reaches
// device k+1 forwardHop after device k; on its way back it enters device k's
// downstream port returnHop after leaving device k+1 and leaves device k
// passDelay later. The last device turns the frame around in turnDelay.
// These give receive times and delays of the size real E-bus terminals show
// (SOEM reports 144 ns and 299 ns for the first two terminals behind an
// EK1100). WithHopDelay changes the forward hop (see hopsFor).
const (
	forwardHop = 140
	turnDelay  = 100
	returnHop  = 20
	passDelay  = 50
)

// hops is the propagation model a segment uses.
type hops struct {
	forward, turn, back, pass int64
}

// hopsFor returns the propagation model for a forward hop of ns: what the
// forward hop gains or loses over the default is link (cable and PHY)
// delay, which a frame also meets on its way back, so the return hop
// changes by the same amount (never below zero). hopsFor(forwardHop) is
// the default model.
func hopsFor(ns int) hops {
	fwd := int64(max(ns, 0))
	return hops{forward: fwd, turn: turnDelay, back: max(returnHop+fwd-forwardHop, 0), pass: passDelay}
}

// Control loop model (see clock.update).
const (
	nsPerSecond = 1_000_000_000
	// tickNs is the ESC's clock period: the local time advances by 10 ns
	// per tick, by 9 or 11 ns on ticks the speed counter selects.
	tickNs = 10
	// minSpeedPeriod is the shortest interval, in ticks, between two 1 ns
	// corrections: the speed counter difference is bounded by the speed
	// counter start minus 0x7F.
	minSpeedPeriod = 0x7F
	// The loop's gains per update: the share of the measured difference
	// slewed away before the next update, and the share added to the
	// frequency estimate.
	phaseGainPermille = 700
	freqGainPermille  = 300
	// Update intervals: the first update assumes defaultInterval; updates
	// closer together than minInterval only feed the difference filter;
	// longer gaps count as maxInterval.
	defaultInterval = 1_000_000
	minInterval     = 10_000
	maxInterval     = 1_000_000_000
	// filterShift is the fixed-point shift of the filtered difference.
	filterShift = 8
)

// clock is a device's distributed clock: a local time that runs at the
// simulator's rate times (1 + drift) from a per-device power-up offset,
// corrected by the ESC's drift control loop; the system time offset and
// delay the master writes; and the latched receive times.
//
// All arithmetic is in integer nanoseconds and parts per billion, with
// 128-bit intermediate products: the local time is exact over any run
// length and nothing accumulates rounding errors.
type clock struct {
	localBase int64 // local time when the segment's time was zero (power-up offset)
	offset    int64 // extra offset set with SetClockOffset

	driftPPB  int64 // oscillator drift, parts per billion
	driftFrom int64 // segment time since which driftPPB applies
	driftBase int64 // drift accumulated before driftFrom

	// Drift control loop: the local time carries a correction that
	// changes at rate1 (ppb) for hold ns after ctlFrom, at rate2 after.
	corr0        int64 // correction at ctlFrom
	ctlFrom      int64
	hold         int64
	rate1, rate2 int64
	freq         int64 // frequency estimate, ppb
	lastUpdate   int64 // segment time of the last control update
	updated      bool  // lastUpdate is valid
	filtered     int64 // mean difference received − local, ns << filterShift
	samples      int64 // differences in the mean, up to its depth
}

// scaleBillionths returns floor(a·b / 1e9) without overflow of the
// product; results beyond int64 saturate.
func scaleBillionths(a, b int64) int64 {
	neg := (a < 0) != (b < 0)
	ua, ub := absU(a), absU(b)
	hi, lo := bits.Mul64(ua, ub)
	if hi >= nsPerSecond {
		if neg {
			return -1 << 63
		}
		return 1<<63 - 1
	}
	q, r := bits.Div64(hi, lo, nsPerSecond)
	if neg {
		if r != 0 {
			q++
		}
		if q > 1<<63 {
			return -1 << 63
		}
		return -int64(q)
	}
	if q > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(q)
}

func absU(v int64) uint64 {
	if v < 0 {
		return uint64(-v)
	}
	return uint64(v)
}

// ppbOf converts a drift in ppm to parts per billion, clamped to
// ±faultcmd.MaxDriftPPM (NaN counts as no drift).
func ppbOf(ppm float64) int64 {
	if ppm != ppm {
		return 0
	}
	ppm = min(max(ppm, -faultcmd.MaxDriftPPM), faultcmd.MaxDriftPPM)
	if ppm < 0 {
		return -int64(-ppm*1000 + 0.5)
	}
	return int64(ppm*1000 + 0.5)
}

// setDrift changes the oscillator drift from segment time t on; the local
// time stays continuous.
func (c *clock) setDrift(ppb, t int64) {
	c.driftBase += scaleBillionths(t-c.driftFrom, c.driftPPB)
	c.driftFrom, c.driftPPB = t, ppb
}

// correction returns the control loop's correction at segment time t.
func (c *clock) correction(t int64) int64 {
	dt := t - c.ctlFrom
	if dt <= 0 {
		return c.corr0
	}
	first := min(dt, c.hold)
	return c.corr0 + scaleBillionths(first, c.rate1) + scaleBillionths(dt-first, c.rate2)
}

// local returns the device's local time at segment time t: the power-up
// offset, the elapsed time at the oscillator's rate, and the correction of
// the drift control loop.
func (c *clock) local(t int64) uint64 {
	drift := c.driftBase + scaleBillionths(t-c.driftFrom, c.driftPPB)
	return uint64(c.localBase + c.offset + t + drift + c.correction(t))
}

// system returns the system time at segment time t: local time plus the
// offset in 0x0920.
func (c *clock) system(regs []byte, t int64) uint64 {
	return c.local(t) + binary.LittleEndian.Uint64(regs[esc.RegDCSystemOffset:])
}

// refreshSystemTime stores the system time at t in 0x0910 for a read.
func (c *clock) refreshSystemTime(regs []byte, t int64) {
	binary.LittleEndian.PutUint64(regs[esc.RegDCSystemTime:], c.system(regs, t))
}

// systemTimeWritten handles a write to 0x0910–0x0917: the written value
// (bytes not written keep the local system time) plus the system time delay
// 0x0928 is compared with the local system time, 32-bit wide when only the
// low four bytes were written, as the ESC does. The difference feeds the
// mean in 0x092C (bit 31 set when the local copy is smaller) and the drift
// control loop (see update).
func (c *clock) systemTimeWritten(regs []byte, written []byte, from int, t int64) {
	local := c.system(regs, t)
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], local)
	copy(w[from:], written)
	delay := binary.LittleEndian.Uint32(regs[esc.RegDCSystemDelay:])
	diff := int64(binary.LittleEndian.Uint64(w[:])+uint64(delay)) - int64(local)
	if from+len(written) <= 4 {
		diff = int64(int32(uint32(diff)))
	}
	diff = min(max(diff, -(1<<31-1)), 1<<31-1)
	c.update(regs, diff, t)
	binary.LittleEndian.PutUint64(regs[esc.RegDCSystemTime:], local)
}

// update runs one step of the drift control loop with diff = received −
// local system time (ns) measured at segment time t.
//
// The model follows the ESC: the local time is never stepped. Each tick
// of 10 ns advances it by 10 ns, and every N-th tick by 9 or 11 ns, N
// being the speed counter start (0x0930) minus the magnitude of the speed
// counter difference (0x0932, at least 0x7F): the applied rate deviation
// is ±1e8/N ppb, so at most about ±787 ppm, and the smallest non-zero one
// is 1e8/(start−1) (24.4 ppm for the default start 0x1000; a larger start
// gives finer steps). Rates between representable ones are reached by
// switching between them from update to update.
//
// The loop is a PI controller per update: it slews 70 % of the measured
// difference away over the expected interval to the next update (the last
// interval), and adds 30 % of the difference per interval to its
// frequency estimate, which then keeps running alone until the next
// update. Without saturation its poles lie at |z| ≈ 0.55: a static
// difference is gone after a few dozen updates whatever their interval.
// The estimate does not integrate while the wanted rate exceeds the
// bound, so a large difference (a missing or wrong 0x0920 offset) is
// slewed at the full rate without wind-up: a 1 s error takes some 21
// minutes to remove, as on a real ESC, which is why masters write the
// coarse part into 0x0920 and leave only the drift to the loop.
func (c *clock) update(regs []byte, diff, t int64) {
	c.commit(t)
	depth := int64(1) << (regs[esc.RegDCFilterDepth] & 0x0F)
	c.samples = min(c.samples+1, depth)
	c.filtered += (diff<<filterShift - c.filtered) / c.samples
	c.storeDifference(regs)

	h := int64(defaultInterval)
	if c.updated {
		h = t - c.lastUpdate
		if h < minInterval {
			return
		}
		h = min(h, maxInterval)
	}
	c.lastUpdate, c.updated = t, true
	start := speedStart(regs)
	maxRate := speedRate(start-minSpeedPeriod, start)
	phase := diff * phaseGainPermille * (nsPerSecond / 1000) / h
	if want := c.freq + phase; want >= -maxRate && want <= maxRate {
		c.freq += diff * freqGainPermille * (nsPerSecond / 1000) / h
		c.freq = min(max(c.freq, -maxRate), maxRate)
	}
	v := speedFor(c.freq+phase, start)
	c.rate1 = speedRate(v, start)
	c.rate2 = speedRate(speedFor(c.freq, start), start)
	c.hold = h
	binary.LittleEndian.PutUint16(regs[esc.RegDCSpeedDiff:], uint16(v))
}

// commit folds the correction up to segment time t into corr0, so that
// the loop's rates may change at t.
func (c *clock) commit(t int64) {
	if t <= c.ctlFrom {
		return
	}
	c.corr0 = c.correction(t)
	c.hold = max(c.hold-(t-c.ctlFrom), 0)
	c.ctlFrom = t
}

// storeDifference writes the mean difference to 0x092C: magnitude in bits
// 30:0, bit 31 set when the local copy is smaller than the received time.
func (c *clock) storeDifference(regs []byte) {
	mean := c.filtered >> filterShift
	if c.filtered < 0 {
		mean = -(-c.filtered >> filterShift)
	}
	var v uint32
	if mean > 0 {
		v = 1<<31 | uint32(min(mean, 1<<31-1))
	} else {
		v = uint32(min(-mean, 1<<31-1))
	}
	binary.LittleEndian.PutUint32(regs[esc.RegDCSystemDiff:], v)
}

// speedStartWritten handles a write to the speed counter start 0x0930: it
// restarts the drift control (speed counter difference and frequency
// estimate zero) from segment time t.
func (c *clock) speedStartWritten(regs []byte, t int64) {
	c.commit(t)
	c.freq, c.rate1, c.rate2, c.hold = 0, 0, 0, 0
	c.updated = false
	binary.LittleEndian.PutUint16(regs[esc.RegDCSpeedDiff:], 0)
}

// filterDepthWritten handles a write to the filter depths 0x0934: the
// mean system time difference starts over.
func (c *clock) filterDepthWritten(regs []byte) {
	c.filtered, c.samples = 0, 0
	c.storeDifference(regs)
}

// speedStart returns the speed counter start 0x0930 (at least 0x80).
func speedStart(regs []byte) int64 {
	return max(int64(binary.LittleEndian.Uint16(regs[esc.RegDCSpeedStart:])&0x7FFF), minSpeedPeriod+1)
}

// speedRate returns the rate deviation, in ppb, that speed counter
// difference v applies: one ns every start−|v| ticks.
func speedRate(v, start int64) int64 {
	if v == 0 {
		return 0
	}
	r := nsPerSecond / tickNs / (start - min(absInt(v), start-minSpeedPeriod))
	if v < 0 {
		return -r
	}
	return r
}

// speedFor returns the speed counter difference whose rate comes closest
// to rate (ppb).
func speedFor(rate, start int64) int64 {
	mag := absInt(rate)
	if 2*mag < speedRate(1, start) {
		return 0
	}
	period := (nsPerSecond/tickNs + mag/2) / mag
	period = min(max(period, minSpeedPeriod), start-1)
	if rate < 0 {
		return period - start
	}
	return start - period
}

func absInt(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// latch stores the receive times of the current frame after a write to
// 0x0900: port 0 (and the processing unit, 0x0918) when it arrived, the
// downstream port when it came back from the devices behind; ports without
// a link keep their values.
func (c *clock) latch(regs []byte, arrival int64, downPort int, back int64, hasBack bool) {
	le := binary.LittleEndian
	le.PutUint32(regs[esc.RegDCRecvTimePort0:], uint32(c.local(arrival)))
	le.PutUint64(regs[esc.RegDCRecvTimeECAT:], c.local(arrival))
	if hasBack {
		le.PutUint32(regs[int(esc.RegDCRecvTimePort0)+4*downPort:], uint32(c.local(back)))
	}
}

// now returns the segment's current time, or 0 for a device in no segment.
func (d *Device) now() int64 {
	if d.seg == nil {
		return 0
	}
	return d.seg.now()
}

// SetClockDrift sets the drift of the device's local clock, in ppm
// (clamped to ±faultcmd.MaxDriftPPM): from now on it runs at the
// simulator's rate times 1 + ppm·1e-6. The local time stays continuous.
func (d *Device) SetClockDrift(ppm float64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clock.setDrift(ppbOf(ppm), d.now())
}

// SetClockOffset sets an offset, in ns, added to the device's local clock
// on top of its power-up value (a step of the local and system time).
func (d *Device) SetClockOffset(ns int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.clock.offset = ns
}

// SystemTime returns the device's system time (register 0x0910) at the
// segment's current time: its local time plus the system time offset
// 0x0920. Devices without a distributed clock return 0.
func (d *Device) SystemTime() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.hasDC {
		return 0
	}
	return d.clock.system(d.mem.b[:], d.now())
}

// SystemTimeDifference returns the mean system time difference of register
// 0x092C as signed ns: local copy minus received system time, positive
// when the local copy is larger (bit 31 clear), negative when it is
// smaller (bit 31 set).
func (d *Device) SystemTimeDifference() int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return decodeTimeDifference(binary.LittleEndian.Uint32(d.mem.b[esc.RegDCSystemDiff:]))
}

// decodeTimeDifference turns a 0x092C value into signed ns, positive when
// the local copy is larger.
func decodeTimeDifference(v uint32) int32 {
	mag := int32(v & 0x7FFFFFFF)
	if v&(1<<31) != 0 {
		return -mag
	}
	return mag
}

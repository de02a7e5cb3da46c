package metrics

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecagent/ecagent/agent/metrics/stats"
	"github.com/ecagent/ecagent/shm"
)

// WindowReport is what CloseWindow measured over one window. Durations are
// int64 nanoseconds, like package stats; an empty Summary (Count 0) means
// the window held no value of that quantity.
type WindowReport struct {
	// Target is the target cycle period in nanoseconds.
	Target int64
	// Counts is what each counter grew by in the window, indexed by
	// Counter: CounterCycles the samples observed, CounterLostFrames the
	// cycles that lost a frame, CounterFramesSent and CounterFramesLost
	// the frames frame by frame, CounterRingDrops the samples the ring
	// dropped. What the Prometheus counters of the same names grew by
	// while the window was open.
	Counts [NumCounters]int64
	// Period is the time between consecutive wake-ups (pairs of samples
	// with consecutive cycle numbers only).
	Period stats.Summary
	// Jitter is |period − target|.
	Jitter stats.Summary
	// SignedJitter is period − target: Period shifted by −Target.
	SignedJitter stats.Summary
	// WakeupLatency is Wake − Deadline.
	WakeupLatency stats.Summary
	// JobDuration is End − Wake. The CPU load of the window is
	// JobDuration divided by Target.
	JobDuration stats.Summary
	// FrameRTT is Recv − Send of frames that came back.
	FrameRTT stats.Summary
	// DCTimeDifference is the absolute distributed-clock difference of
	// cycles that measured it.
	DCTimeDifference stats.Summary
	// DCControllerError is the absolute error of the controller that
	// keeps the master's cycle on the distributed-clock reference time
	// (shm.Sample.CtlErr), of cycles that measured it.
	DCControllerError stats.Summary
}

// Summary returns the window's statistics of q in nanoseconds; for
// QuantityCPULoad those of the job duration, which Values divides by the
// target period. A Quantity outside the range gives the zero Summary.
func (r *WindowReport) Summary(q Quantity) stats.Summary {
	if p := r.summary(q); p != nil {
		return *p
	}
	return stats.Summary{}
}

// summary returns the field of r that holds q's statistics, nil for a
// Quantity outside the range.
func (r *WindowReport) summary(q Quantity) *stats.Summary {
	switch q {
	case QuantityPeriod:
		return &r.Period
	case QuantityJitter:
		return &r.Jitter
	case QuantityWakeupLatency:
		return &r.WakeupLatency
	case QuantityJobDuration, QuantityCPULoad:
		return &r.JobDuration
	case QuantityFrameRTT:
		return &r.FrameRTT
	case QuantityDCTimeDifference:
		return &r.DCTimeDifference
	case QuantityDCControllerError:
		return &r.DCControllerError
	}
	return nil
}

// Values returns the window statistics of q in its base unit (seconds, or
// a ratio for QuantityCPULoad), in the order of WindowStats, and false
// when the window held no value of q. Both renderers export these: the
// Prometheus window gauges and the OpenTelemetry window gauges.
func (r *WindowReport) Values(q Quantity) (v [NumWindowStats]float64, ok bool) {
	s := r.summary(q)
	if s == nil || s.Count == 0 {
		return v, false
	}
	unit := 1e9
	if q == QuantityCPULoad {
		unit = float64(r.Target)
	}
	// Same order as WindowStats.
	return [NumWindowStats]float64{
		float64(s.Min) / unit, float64(s.Max) / unit, s.Mean / unit, s.StdDev / unit,
		float64(s.P50) / unit, float64(s.P90) / unit, float64(s.P99) / unit, float64(s.P999) / unit,
	}, true
}

// Consumer turns the cycle samples drained from the shared-memory ring into
// Prometheus histograms, counters and exact window statistics: a Deriver
// computes each sample's figures, the Consumer records them. It is owned
// by the one goroutine that drains the ring: Observe, CloseWindow, Restart,
// Attached and SetSegment must not be called concurrently with each other.
// Prometheus may gather the registry at any time.
type Consumer struct {
	deriver *Deriver

	hist       [NumQuantities]prometheus.Histogram
	windows    [numWindows]*stats.Window
	winGauges  [NumQuantities][NumWindowStats]prometheus.Gauge
	winSamples [NumQuantities]prometheus.Gauge
	counters   [numSampleCounters]prometheus.Counter

	// Counts of the current window (for WindowReport).
	winCounts [numSampleCounters]int64
	// winSegment is the segment counters' totals when the last window
	// closed; skipSegment moves it to the totals of the next SetSegment
	// (Attached).
	winSegment  [NumCounters - numSampleCounters]uint64
	skipSegment bool
}

// Observe records one cycle sample: its figures (see Deriver.Derive) go
// into the histograms, the windows and the counters. It does not
// allocate.
func (c *Consumer) Observe(s *shm.Sample) {
	f := c.deriver.Derive(s)
	for k, n := range f.counts[:numSampleCounters] {
		if n > 0 {
			c.counters[k].Add(float64(n))
			c.winCounts[k] += n
		}
	}
	for q := range NumQuantities {
		v, ok := f.Value(q)
		if !ok {
			continue
		}
		c.hist[q].Observe(v)
		if q < numWindows {
			c.windows[q].Add(f.raw[q])
		}
	}
}

// CloseWindow ends the current window: it publishes the window gauges
// (NaN for a quantity without values), returns the window's figures and
// starts the next window. The agent calls it every metrics.window. It
// sorts the window's values (O(n log n), a few milliseconds for 40 000
// values) and does not allocate.
func (c *Consumer) CloseWindow() WindowReport {
	r := WindowReport{Target: c.deriver.Target()}
	copy(r.Counts[:], c.winCounts[:])
	for k := range c.winSegment {
		now := c.deriver.SegmentCount(numSampleCounters + Counter(k))
		r.Counts[numSampleCounters+Counter(k)] = int64(now - c.winSegment[k])
		c.winSegment[k] = now
	}
	for q, w := range c.windows {
		*r.summary(Quantity(q)) = w.Snapshot()
	}
	r.SignedJitter = shifted(r.Period, -r.Target)

	for q := range NumQuantities {
		c.publish(q, &r)
	}

	for _, w := range c.windows {
		w.Reset()
	}
	c.winCounts = [numSampleCounters]int64{}
	return r
}

// publish sets a quantity's window gauges from the report.
func (c *Consumer) publish(q Quantity, r *WindowReport) {
	c.winSamples[q].Set(float64(r.summary(q).Count))
	values, ok := r.Values(q)
	for i, gauge := range c.winGauges[q] {
		if ok {
			gauge.Set(values[i])
		} else {
			gauge.Set(math.NaN())
		}
	}
}

// Restart forgets the previous sample, so the next one starts a new run of
// periods, and starts a new segment (Deriver.Restart). Call it when the
// agent attaches to a cycle process.
func (c *Consumer) Restart() { c.deriver.Restart() }

// SetSegment sets the segment counters — ecagent_sample_ring_drops_total,
// ecagent_cyclic_frames_sent_total, ecagent_cyclic_frames_lost_total,
// ecagent_cyclic_frames_late_total, ecagent_link_frames_received_total and
// ecagent_link_kernel_drops_total —
// from the running totals the segment holds, read at one drain; they
// continue across a new segment (Deriver.SetSegment).
func (c *Consumer) SetSegment(s SegmentCounts) {
	c.deriver.SetSegment(s)
	if c.skipSegment {
		c.skipSegment = false
		for k := range c.winSegment {
			c.winSegment[k] = c.deriver.SegmentCount(numSampleCounters + Counter(k))
		}
	}
}

// Attached says, after Restart, that the cycle process was running before
// this agent attached to it: the frames and ring drops its segment counted
// until the next SetSegment go into the counters, but not into the next
// window, which holds those counted while this agent watched. (The samples
// the ring kept from before are counted as they are drained.)
func (c *Consumer) Attached() { c.skipSegment = true }

// Target returns the target cycle period in nanoseconds.
func (c *Consumer) Target() int64 { return c.deriver.Target() }

// shifted returns s with every location statistic moved by d (the spread,
// StdDev, is unchanged); an empty summary stays empty.
func shifted(s stats.Summary, d int64) stats.Summary {
	if s.Count == 0 {
		return s
	}
	s.Min += d
	s.Max += d
	s.Mean += float64(d)
	s.P50 += d
	s.P90 += d
	s.P99 += d
	s.P999 += d
	s.P9999 += d
	return s
}

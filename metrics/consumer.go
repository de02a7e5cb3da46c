package metrics

import (
	"math"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecagent/ecagent/metrics/stats"
	"github.com/ecagent/ecagent/shm"
)

// quantity is one figure derived from the cycle samples. Each has a
// histogram, a set of window gauges and a quantity label value.
type quantity int

const (
	qPeriod quantity = iota
	qJitter
	qWakeup
	qJob
	qFrameRTT
	qDCTimeDiff
	qDCCtlErr
	qCPULoad
	numQuantities
)

// numWindows is the number of exact windows the consumer keeps: one per
// quantity except qCPULoad, whose statistics are those of qJob divided by
// the target period.
const numWindows = qCPULoad

// quantitySpec says how a quantity is named.
type quantitySpec struct {
	label     string // value of the quantity label of ecagent_window_samples
	histogram string
	window    string
}

// quantitySpecs lists the quantities in quantity order.
func quantitySpecs() [numQuantities]quantitySpec {
	return [numQuantities]quantitySpec{
		qPeriod:     {"cycle_period", nameCyclePeriod, nameCyclePeriodWin},
		qJitter:     {"cycle_jitter", nameCycleJitter, nameCycleJitterWin},
		qWakeup:     {"wakeup_latency", nameWakeupLatency, nameWakeupWin},
		qJob:        {"job_duration", nameJobDuration, nameJobWin},
		qFrameRTT:   {"frame_rtt", nameFrameRTT, nameFrameRTTWin},
		qDCTimeDiff: {"dc_time_difference", nameDCTimeDiff, nameDCTimeDiffWin},
		qDCCtlErr:   {"dc_controller_error", nameDCCtlErr, nameDCCtlErrWin},
		qCPULoad:    {"cycle_cpu_load", nameCPULoad, nameCPULoadWin},
	}
}

// numStats is the number of window statistics per quantity (see
// WindowStats).
const numStats = 8

// WindowReport is what CloseWindow measured over one window. Durations are
// int64 nanoseconds, like package stats; an empty Summary (Count 0) means
// the window held no value of that quantity.
type WindowReport struct {
	// Target is the target cycle period in nanoseconds.
	Target int64
	// Cycles is the number of samples observed in the window.
	Cycles int64
	// Overruns, Skipped, LostFrames and WKCErrors count the window's
	// overrunning cycles, skipped deadlines, lost frames and working
	// counter errors.
	Overruns, Skipped, LostFrames, WKCErrors int64
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

// Consumer turns the cycle samples drained from the shared-memory ring into
// Prometheus histograms, counters and exact window statistics. It is owned
// by the one goroutine that drains the ring: Observe, CloseWindow, Restart
// and SetRingDrops must not be called concurrently with each other.
// Prometheus may gather the registry at any time.
type Consumer struct {
	target  int64 // ns
	tracker stats.JitterTracker

	hist       [numQuantities]prometheus.Histogram
	windows    [numWindows]*stats.Window
	winGauges  [numQuantities][numStats]prometheus.Gauge
	winSamples [numQuantities]prometheus.Gauge

	cycles, overruns, skipped, lostFrames, wkcErrors prometheus.Counter
	lateAnswers                                      prometheus.Counter
	expectedWKC                                      atomic.Int32 // −1 before the first sample

	// Counts of the current window (for WindowReport).
	winCycles, winOverruns, winSkipped, winLost, winWKC int64

	// Ring drops: ringDropsLast is the last absolute value seen,
	// ringDropsBase what earlier rings (before a reset) had dropped;
	// ringDrops is their sum, read by Prometheus.
	ringDropsLast, ringDropsBase uint64
	ringDrops                    atomic.Uint64
}

// Observe records one cycle sample. It does not allocate.
//
// It derives: the period and jitter (only between samples with consecutive
// cycle numbers, so a sample dropped from the ring never shows up as a
// double period), the wake-up latency, the job duration and the CPU load
// (job duration / target period: the load the job puts on the cycle's
// budget, independent of how late the cycle woke), the frame round trip
// (unless the frame was lost) and the absolute DC difference (when
// measured), and the absolute DC controller error (when measured). The
// counters follow the sample's flags.
func (c *Consumer) Observe(s *shm.Sample) {
	c.cycles.Inc()
	c.winCycles++
	if s.Flags&shm.SampleOverrun != 0 {
		c.overruns.Inc()
		c.winOverruns++
	}
	if s.Skipped > 0 {
		c.skipped.Add(float64(s.Skipped))
		c.winSkipped += int64(s.Skipped)
	}
	if s.Flags&shm.SampleWKCMismatch != 0 {
		c.wkcErrors.Inc()
		c.winWKC++
	}
	if wkc := int32(s.ExpectedWKC); c.expectedWKC.Load() != wkc {
		c.expectedWKC.Store(wkc)
	}

	if period, jitter, ok := c.tracker.Observe(s.Cycle, s.Wake); ok {
		c.record(qPeriod, period)
		c.record(qJitter, absInt64(jitter))
	}
	c.record(qWakeup, s.Wake-s.Deadline)
	job := s.End - s.Wake
	c.record(qJob, job)
	c.hist[qCPULoad].Observe(float64(job) / float64(c.target))
	if s.Flags&shm.SampleLateAnswer != 0 {
		c.lateAnswers.Inc()
	}
	if s.Flags&shm.SampleLostFrame != 0 {
		c.lostFrames.Inc()
		c.winLost++
	} else {
		c.record(qFrameRTT, s.Recv-s.Send)
	}
	if s.Flags&shm.SampleDCValid != 0 {
		c.record(qDCTimeDiff, absInt64(int64(s.DCDiff)))
	}
	if s.Flags&shm.SampleCtlValid != 0 {
		c.record(qDCCtlErr, absInt64(int64(s.CtlErr)))
	}
}

// record adds a nanosecond value to a quantity's window and histogram.
func (c *Consumer) record(q quantity, ns int64) {
	c.windows[q].Add(ns)
	c.hist[q].Observe(seconds(ns))
}

// CloseWindow ends the current window: it publishes the window gauges
// (NaN for a quantity without values), returns the window's figures and
// starts the next window. The agent calls it every metrics.window. It
// sorts the window's values (O(n log n), a few milliseconds for 40 000
// values) and does not allocate.
func (c *Consumer) CloseWindow() WindowReport {
	r := WindowReport{
		Target:            c.target,
		Cycles:            c.winCycles,
		Overruns:          c.winOverruns,
		Skipped:           c.winSkipped,
		LostFrames:        c.winLost,
		WKCErrors:         c.winWKC,
		Period:            c.windows[qPeriod].Snapshot(),
		Jitter:            c.windows[qJitter].Snapshot(),
		WakeupLatency:     c.windows[qWakeup].Snapshot(),
		JobDuration:       c.windows[qJob].Snapshot(),
		FrameRTT:          c.windows[qFrameRTT].Snapshot(),
		DCTimeDifference:  c.windows[qDCTimeDiff].Snapshot(),
		DCControllerError: c.windows[qDCCtlErr].Snapshot(),
	}
	r.SignedJitter = shifted(r.Period, -c.target)

	c.publish(qPeriod, &r.Period, 1e9)
	c.publish(qJitter, &r.Jitter, 1e9)
	c.publish(qWakeup, &r.WakeupLatency, 1e9)
	c.publish(qJob, &r.JobDuration, 1e9)
	c.publish(qFrameRTT, &r.FrameRTT, 1e9)
	c.publish(qDCTimeDiff, &r.DCTimeDifference, 1e9)
	c.publish(qDCCtlErr, &r.DCControllerError, 1e9)
	c.publish(qCPULoad, &r.JobDuration, float64(c.target))

	for _, w := range c.windows {
		w.Reset()
	}
	c.winCycles, c.winOverruns, c.winSkipped, c.winLost, c.winWKC = 0, 0, 0, 0, 0
	return r
}

// publish sets a quantity's window gauges from a summary of values that
// are divided by unit (1e9 turns nanoseconds into seconds).
func (c *Consumer) publish(q quantity, s *stats.Summary, unit float64) {
	c.winSamples[q].Set(float64(s.Count))
	g := &c.winGauges[q]
	if s.Count == 0 {
		for _, gauge := range g {
			gauge.Set(math.NaN())
		}
		return
	}
	// Same order as WindowStats.
	g[0].Set(float64(s.Min) / unit)
	g[1].Set(float64(s.Max) / unit)
	g[2].Set(s.Mean / unit)
	g[3].Set(s.StdDev / unit)
	g[4].Set(float64(s.P50) / unit)
	g[5].Set(float64(s.P90) / unit)
	g[6].Set(float64(s.P99) / unit)
	g[7].Set(float64(s.P999) / unit)
}

// Restart forgets the previous sample, so the next one starts a new run of
// periods. Call it when the cycle process restarts (its cycle numbers start
// again from 0).
func (c *Consumer) Restart() { c.tracker.Reset() }

// SetRingDrops sets ecagent_sample_ring_drops_total from the sample ring's
// drop counter (an absolute value, shm.Ring.Drops). A value below the last
// one means a new ring (the cycle process made a new segment): the counter
// then continues from where it was, so it never goes backwards.
func (c *Consumer) SetRingDrops(n uint64) {
	if n < c.ringDropsLast {
		c.ringDropsBase += c.ringDropsLast
	}
	c.ringDropsLast = n
	c.ringDrops.Store(c.ringDropsBase + n)
}

// Target returns the target cycle period in nanoseconds.
func (c *Consumer) Target() int64 { return c.target }

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

// seconds converts nanoseconds to seconds. Dividing (rather than
// multiplying by 1e-9) gives the correctly rounded result, so 5000 ns is
// exactly the bucket bound 5e-6.
func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// absInt64 returns |v|, saturating at the largest int64.
func absInt64(v int64) int64 {
	if v < 0 {
		if v == math.MinInt64 {
			return math.MaxInt64
		}
		return -v
	}
	return v
}

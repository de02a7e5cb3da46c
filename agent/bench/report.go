package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/contract"
)

// IntervalFraction is the share of cycles the reported symmetric interval
// around the target holds.
const IntervalFraction = 0.95

// ErrNoCycles is returned by Recorder.Report when too few samples arrived
// to measure anything (no sample, or no period between two samples).
var ErrNoCycles = errors.New("bench: no cycles measured")

// RunInfo describes a bench run beyond its samples: what was asked, on
// what, and what the host granted. Run fills it; tests build it by hand.
type RunInfo struct {
	// Requested is the number of cycles the run asked for.
	Requested uint64 `json:"requested_cycles"`
	// RingDrops is the number of samples the cycle process dropped
	// because the ring was full (shm.Ring.Drops); normally 0.
	RingDrops uint64 `json:"ring_drops"`
	// FramesSent and FramesLost count the cyclic frames the cycle process
	// sent and the ones that did not come back in time, frame by frame
	// (shm.Heartbeat.Frames): a cycle of two frames that loses both adds
	// 2 to FramesLost and 1 to Report.LostFrames.
	FramesSent uint64 `json:"frames_sent"`
	FramesLost uint64 `json:"frames_lost"`
	// Start and End are the wall-clock times the measured run started
	// (cyclic operation reached) and ended.
	Start time.Time `json:"start_time"`
	End   time.Time `json:"end_time"`
	// Interface is bus.interface; "" is the built-in simulated segment in
	// another process.
	Interface string `json:"interface"`
	// Slaves is the number of slaves on the bus.
	Slaves int `json:"slaves"`
	// Priority, Core and BusyWait are cycle.priority, cycle.core and
	// cycle.busywait as configured.
	Priority int           `json:"priority"`
	Core     int           `json:"core"`
	BusyWait time.Duration `json:"busywait_ns"`
	// RT is what the cycle thread asked the host for and got.
	RT []contract.RTSetting `json:"rt"`
	// Telemetry says what ran in the bench process beside the cycle;
	// nil when nothing did.
	Telemetry *Telemetry `json:"telemetry,omitempty"`
	// Interrupted is true when the run was stopped before its end.
	Interrupted bool `json:"interrupted,omitempty"`
	// Cmdline is the command line of the run.
	Cmdline string `json:"cmdline"`
	// Version is the ecagent version that ran it.
	Version string `json:"version"`
}

// Telemetry describes the load a running agent puts beside the cycle that
// the bench reproduced in its own process.
type Telemetry struct {
	// Address is where the Prometheus endpoint listened.
	Address string `json:"address"`
	// ScrapeInterval is how often the bench scraped /metrics.
	ScrapeInterval time.Duration `json:"scrape_interval_ns"`
	// Scrapes and ScrapeErrors count the scrapes made and failed.
	Scrapes      int `json:"scrapes"`
	ScrapeErrors int `json:"scrape_errors"`
	// Windows is the number of statistics windows closed.
	Windows int `json:"windows"`
}

// Figures are the statistics of one measured quantity, in nanoseconds.
type Figures struct {
	Count  int64   `json:"count"`
	Min    int64   `json:"min_ns"`
	Avg    float64 `json:"avg_ns"`
	Max    int64   `json:"max_ns"`
	StdDev float64 `json:"stddev_ns"`
	P50    int64   `json:"p50_ns"`
	P90    int64   `json:"p90_ns"`
	P99    int64   `json:"p99_ns"`
	P999   int64   `json:"p99_9_ns"`
	P9999  int64   `json:"p99_99_ns"`
	// Sampled is true when the percentiles come from a uniform random
	// sample of MaxExactValues values rather than from all of them.
	Sampled bool `json:"percentiles_sampled,omitempty"`
}

func figuresOf(s stats.Summary) Figures {
	return Figures{
		Count: s.Count, Min: s.Min, Avg: s.Mean, Max: s.Max, StdDev: s.StdDev,
		P50: s.P50, P90: s.P90, P99: s.P99, P999: s.P999, P9999: s.P9999,
		Sampled: s.Approximate,
	}
}

// Jitter is the deviation of the cycle time from the target.
type Jitter struct {
	// Min and Max are the extremes of the signed jitter, period − target.
	Min int64 `json:"min_ns"`
	Max int64 `json:"max_ns"`
	// AbsP99, AbsP999 and AbsMax are the nearest-rank percentiles and the
	// maximum of |period − target|.
	AbsP99  int64 `json:"abs_p99_ns"`
	AbsP999 int64 `json:"abs_p99_9_ns"`
	AbsMax  int64 `json:"abs_max_ns"`
	// Interval is the narrowest interval around the target holding
	// IntervalFraction of the cycle times.
	Interval Interval `json:"interval"`
	// Bins is the cycle-time distribution in bins of jitter whose edges
	// grow in 1-2-5 steps away from the target, from about the median
	// |jitter| (see jitterBins), from the shortest to the longest cycle.
	Bins []Bin `json:"bins"`
}

// Interval is target ± HalfWidth, holding Fraction of the cycle times.
type Interval struct {
	Lower     int64   `json:"lower_ns"`
	Upper     int64   `json:"upper_ns"`
	HalfWidth int64   `json:"half_width_ns"`
	Count     int     `json:"count"`
	Fraction  float64 `json:"fraction"`
}

// Bin is one bin of the cycle-time distribution: Lower ≤ period < Upper,
// in nanoseconds of cycle time; subtract the target for jitter.
type Bin struct {
	Lower   float64 `json:"lower_ns"`
	Upper   float64 `json:"upper_ns"`
	Count   int     `json:"count"`
	Percent float64 `json:"percent"`
}

// Report is the result of a bench run: every figure `ecagent bench` prints
// and writes to --json. Durations are nanoseconds.
type Report struct {
	RunInfo
	// Target is the target cycle period.
	Target time.Duration `json:"target_ns"`
	// Cycles is the number of cycle samples received.
	Cycles uint64 `json:"cycles"`
	// MissingCycles counts cycle numbers absent between received samples
	// (dropped from the ring); it equals RingDrops unless the drops fell
	// at the end of the run.
	MissingCycles uint64 `json:"missing_cycles"`
	// Duration is from the first wake-up to the end of the last job.
	Duration time.Duration `json:"duration_ns"`
	// CycleTime is the period between consecutive wake-ups.
	CycleTime Figures `json:"cycle_time"`
	// Jitter is CycleTime − Target.
	Jitter Jitter `json:"jitter"`
	// WakeupLatency is wake-up − deadline.
	WakeupLatency Figures `json:"wakeup_latency"`
	// JobTime is end of job − wake-up.
	JobTime Figures `json:"job_time"`
	// CPULoadAvg and CPULoadMax are the average and largest job time as a
	// percentage of the target period.
	CPULoadAvg float64 `json:"cpu_load_avg_percent"`
	CPULoadMax float64 `json:"cpu_load_max_percent"`
	// FrameRTT is the cyclic frame's round trip, frames that came back.
	FrameRTT Figures `json:"frame_rtt"`
	// ExpectedWKC is the working counter the bus configuration expects;
	// WKCMin and WKCMax the extremes seen.
	ExpectedWKC uint16 `json:"expected_wkc"`
	WKCMin      uint16 `json:"wkc_min"`
	WKCMax      uint16 `json:"wkc_max"`
	// LostFrames counts cycles in which a cyclic frame did not come back
	// in time (a cycle of several frames counts once, as
	// ecagent_lost_frames_total does); WKCErrors cycles whose frames came
	// back with a different working counter.
	LostFrames uint64 `json:"lost_frames"`
	WKCErrors  uint64 `json:"wkc_errors"`
	// Overruns counts cycles whose job ended after the next deadline;
	// SkippedDeadlines the deadlines skipped because of them.
	Overruns         uint64 `json:"overruns"`
	SkippedDeadlines uint64 `json:"skipped_deadlines"`
	// YieldLate counts cycles woken late by the cycle's own yield to the
	// Go scheduler (shm.SampleYieldLate): the late wake-ups the cycle
	// process made itself, apart from the host's. YieldLateMax is the
	// largest wake-up latency among them.
	YieldLate    uint64        `json:"yield_late"`
	YieldLateMax time.Duration `json:"yield_late_max_ns"`
	// ScheduleRestarts counts breaks of the deadline grid (normally one,
	// after the cycle process's start-up bookkeeping); the period across
	// a break is not measured.
	ScheduleRestarts uint64 `json:"schedule_restarts"`
	// EarlyWakeups counts wake-ups before the deadline (a sleep cut short);
	// they are counted as 0 in the histogram.
	EarlyWakeups uint64 `json:"early_wakeups,omitempty"`
	// WakeupHistogram is the wake-up latency in 1 µs bins from 0.
	WakeupHistogram *stats.LinearHistogram `json:"-"`
	// WakeupWholeMicrosAvg is the mean of the wake-up latencies truncated
	// to whole microseconds, in µs: what cyclictest reports as avg.
	WakeupWholeMicrosAvg float64 `json:"-"`
	// Comparison is the side-by-side with cyclictest in interleaved
	// blocks, when it ran.
	Comparison *BlockComparison `json:"cyclictest_comparison,omitempty"`
}

// Report computes the figures of the samples observed so far, adding run
// information. It sorts the kept values in place; call it once, at the
// end of the run. It fails with ErrNoCycles when fewer than two
// consecutive samples were observed.
func (r *Recorder) Report(run RunInfo) (*Report, error) {
	if r.samples == 0 || r.period.Count() == 0 {
		return nil, fmt.Errorf("%w: %d samples, %d periods", ErrNoCycles, r.samples, r.period.Count())
	}
	rep := &Report{
		RunInfo:          run,
		Target:           time.Duration(r.target),
		Cycles:           r.samples,
		MissingCycles:    r.gaps,
		Duration:         time.Duration(r.span()),
		CycleTime:        figuresOf(r.period.Snapshot()),
		WakeupLatency:    figuresOf(r.wake.Snapshot()),
		JobTime:          figuresOf(r.job.Snapshot()),
		FrameRTT:         figuresOf(r.rtt.Snapshot()),
		ExpectedWKC:      r.expectedWKC,
		WKCMin:           r.wkcMin,
		WKCMax:           r.wkcMax,
		LostFrames:       r.lost,
		WKCErrors:        r.wkcErrors,
		Overruns:         r.overruns,
		SkippedDeadlines: r.skipped,
		YieldLate:        r.yieldLate,
		YieldLateMax:     time.Duration(r.yieldLateMax),
		ScheduleRestarts: r.restarts,
		EarlyWakeups:     r.negativeWakes,
		WakeupHistogram:  r.wakeHist,
	}
	rep.WakeupWholeMicrosAvg = float64(r.wakeWholeMicro) / float64(r.samples)
	rep.CPULoadAvg = 100 * rep.JobTime.Avg / float64(r.target)
	rep.CPULoadMax = 100 * float64(rep.JobTime.Max) / float64(r.target)

	periods := r.period.Values()
	j := &rep.Jitter
	j.Min, j.Max = rep.CycleTime.Min-r.target, rep.CycleTime.Max-r.target
	j.AbsMax = max(-j.Min, j.Max)
	for _, q := range []struct {
		fraction float64
		dst      *int64
	}{{0.99, &j.AbsP99}, {0.999, &j.AbsP999}} {
		in, err := stats.SymmetricInterval(periods, r.target, q.fraction)
		if err != nil {
			return nil, fmt.Errorf("bench: jitter percentile: %w", err)
		}
		*q.dst = in.HalfWidth
	}
	in, err := stats.SymmetricInterval(periods, r.target, IntervalFraction)
	if err != nil {
		return nil, fmt.Errorf("bench: jitter interval: %w", err)
	}
	j.Interval = Interval{Lower: in.Lower, Upper: in.Upper, HalfWidth: in.HalfWidth, Count: in.Count, Fraction: in.Fraction}
	if j.Bins, err = jitterBins(periods, r.target); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return rep, nil
}

// span is the time measured: from the first wake-up to the end of the last
// job of each block, added up.
func (r *Recorder) span() int64 {
	if r.blockSamples == 0 {
		return r.priorBlocksSpan
	}
	return r.priorBlocksSpan + r.last.End - r.blockFirst.Wake
}

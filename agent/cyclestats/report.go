package cyclestats

import "github.com/ecagent/ecagent/agent/cyclestats/stats"

// Report is what one closed window measured (Windows.Close): what every
// counter grew by and the exact statistics of every quantity. Durations
// are int64 nanoseconds, like package stats; an empty Summary (Count 0)
// means the window held no value of that quantity.
type Report struct {
	// Target is the target cycle period in nanoseconds.
	Target int64
	// Counts is what each counter grew by in the window, indexed by
	// Counter: CounterCycles the samples observed, CounterLostFrames the
	// cycles that lost a frame, CounterFramesSent and CounterFramesLost
	// the frames frame by frame, CounterRingDrops the samples the ring
	// dropped. What the counters of the same names grew by while the
	// window was open.
	Counts [NumCounters]int64
	// Windows holds the statistics of each quantity with a window of
	// its own, indexed by Quantity (Summary gives those of every
	// quantity).
	Windows [NumWindowed]stats.Summary
	// SignedJitter is period − target: the period's statistics shifted
	// by −Target.
	SignedJitter stats.Summary
}

// Summary returns the window's statistics of q in nanoseconds; for
// QuantityCPULoad those of the job duration, which Values divides by the
// target period. A Quantity outside the range gives the zero Summary.
func (r *Report) Summary(q Quantity) stats.Summary {
	if p := r.summary(q); p != nil {
		return *p
	}
	return stats.Summary{}
}

// summary returns the field of r that holds q's statistics, nil for a
// Quantity outside the range.
func (r *Report) summary(q Quantity) *stats.Summary {
	switch {
	case q == QuantityCPULoad:
		return &r.Windows[QuantityJobDuration]
	case q >= 0 && int(q) < NumWindowed:
		return &r.Windows[q]
	}
	return nil
}

// Values returns the window statistics of q in its base unit (seconds, or
// a ratio for QuantityCPULoad), indexed by Stat, and false when the
// window held no value of q.
// The Prometheus and the OpenTelemetry window gauges export these.
func (r *Report) Values(q Quantity) (v [NumStats]float64, ok bool) {
	s := r.summary(q)
	if s == nil || s.Count == 0 {
		return v, false
	}
	unit := 1e9
	if q.Info().Unit == UnitRatio {
		unit = float64(r.Target)
	}
	for st := range NumStats {
		v[st] = st.Of(s) / unit
	}
	return v, true
}

// Of returns statistic st of s, in the unit of s.
func (st Stat) Of(s *stats.Summary) float64 {
	switch st {
	case StatMean:
		return s.Mean
	case StatStdDev:
		return s.StdDev
	}
	v, _ := st.Int(s)
	return float64(v)
}

// Int returns statistic st of s exactly, and true, when it is one of the
// values measured (the min, the max, a percentile); false for those
// computed from them (the mean, the standard deviation).
func (st Stat) Int(s *stats.Summary) (int64, bool) {
	switch st {
	case StatMin:
		return s.Min, true
	case StatMax:
		return s.Max, true
	case StatP50:
		return s.P50, true
	case StatP90:
		return s.P90, true
	case StatP99:
		return s.P99, true
	case StatP999:
		return s.P999, true
	}
	return 0, false
}

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

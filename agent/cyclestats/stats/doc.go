// Package stats computes the timing figures ecagent reports for its cyclic job:
// exact per-window statistics (count, min, max, mean, standard deviation and
// nearest-rank percentiles), the jitter distribution report used in EtherCAT
// master write-ups (equal-width bins between min and max, and the symmetric
// interval holding a given fraction of samples), a fixed-width histogram that can
// be written and read in cyclictest's --json format, and helpers that turn wake
// times into periods and jitter.
//
// The package is pure computation: no I/O, no Prometheus, no clocks. All values
// are int64 nanoseconds unless a name says otherwise. The hot-path methods
// (Window.Add, LinearHistogram.Add, JitterTracker.Observe) do not allocate.
// None of the types is safe for concurrent use; each is owned by one goroutine,
// in ecagent the metrics consumer that drains the sample ring.
//
// # Percentile definition
//
// Every percentile in this package uses the nearest-rank definition: for n
// sorted values x[1] ≤ … ≤ x[n] and a quantile q in (0, 1], the result is x[r]
// with r = ⌈q·n⌉ clamped to [1, n]. The result is always one of the observed
// values (for histograms: the lower edge of the bin holding the r-th value). For
// the values 1…1000, p99 is 990, p99.9 is 999 and p99.99 is 1000. To keep
// ⌈q·n⌉ free of floating-point surprises q is first rounded to a multiple of
// 1e-6, so 0.999 means exactly 999/1000.
package stats

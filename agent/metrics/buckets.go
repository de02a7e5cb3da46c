package metrics

import (
	"slices"
	"time"
)

// Native (sparse) histogram settings shared by every histogram.
const (
	// nativeBucketFactor 1.1 selects schema 3: each native bucket is
	// 2^(1/8) ≈ 1.09 times wider than the one before, about 9 % resolution.
	nativeBucketFactor = 1.1
	// nativeMaxBuckets bounds the native buckets per histogram. 1 µs … 10 ms
	// at schema 3 spans about 106 buckets, so this leaves room for outliers
	// before the resolution is halved.
	nativeMaxBuckets = 160
	// nativeMinResetDuration: when the bucket limit is hit, the histogram
	// is reset (a counter reset to Prometheus) at most once an hour;
	// in between, its resolution is halved instead.
	nativeMinResetDuration = time.Hour
)

// timingSteps are the 1-2-5 steps from 1 µs to 10 ms of the
// microsecond-scale timings.
func timingSteps() []time.Duration {
	return []time.Duration{
		1 * time.Microsecond, 2 * time.Microsecond, 5 * time.Microsecond,
		10 * time.Microsecond, 20 * time.Microsecond, 50 * time.Microsecond,
		100 * time.Microsecond, 200 * time.Microsecond, 500 * time.Microsecond,
		1 * time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
		10 * time.Millisecond,
	}
}

// timingBuckets are the classic bucket bounds, in seconds, of the
// microsecond-scale timings (jitter, wake-up latency, job duration, frame
// round trip): 1-2-5 steps from 1 µs to 10 ms.
func timingBuckets() []float64 { return boundsInSeconds(timingSteps()) }

// boundsInSeconds converts durations to bucket bounds in seconds. Each
// bound is the integer count of nanoseconds divided by 1e9, one correctly
// rounded division: the float64 nearest the exact decimal, which the
// exposition prints as that decimal (le="0.0012"). Adding or subtracting
// seconds as floats instead leaves binary noise
// (le="0.0012000000000000001").
func boundsInSeconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = float64(d.Nanoseconds()) / 1e9
	}
	return out
}

// dcBuckets are the classic bucket bounds, in seconds, of the absolute
// distributed-clock difference and controller error: 1-2-5 steps from
// 10 ns to 1 ms (a synchronised segment stays well below 1 µs).
func dcBuckets() []float64 {
	return []float64{
		10e-9, 20e-9, 50e-9,
		100e-9, 200e-9, 500e-9,
		1e-6, 2e-6, 5e-6,
		10e-6, 20e-6, 50e-6,
		100e-6, 200e-6, 500e-6,
		1e-3,
	}
}

// loadBuckets are the classic bucket bounds of the per-cycle CPU load
// ratio; above 1 the job took longer than a cycle.
func loadBuckets() []float64 {
	return []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 2}
}

// periodBuckets are the classic bucket bounds, in seconds, of the cycle
// period: the target period plus and minus the timing steps (so the same
// resolution as the jitter histogram around the target), then 2, 3 and 5
// times the target for cycles that skipped deadlines. Bounds at or below
// zero are left out.
func periodBuckets(target time.Duration) []float64 {
	steps := timingSteps()
	bounds := make([]time.Duration, 0, 2*len(steps)+4)
	for _, d := range steps {
		if b := target - d; b > 0 {
			bounds = append(bounds, b)
		}
	}
	bounds = append(bounds, target)
	for _, d := range steps {
		if d < target { // the multiples of the target take over from here
			bounds = append(bounds, target+d)
		}
	}
	bounds = append(bounds, 2*target, 3*target, 5*target)
	slices.Sort(bounds)
	return boundsInSeconds(slices.Compact(bounds))
}

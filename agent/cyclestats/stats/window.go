package stats

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Summary is the statistics of one window. All values are nanoseconds (or
// whatever unit the caller fed in). An empty window gives the zero Summary:
// every field is 0 (never NaN, so a Summary always encodes as JSON); check
// Count before exporting it.
type Summary struct {
	// Count is the number of values added to the window.
	Count int64
	// Sampled is the number of values the percentiles were computed from. It
	// equals Count unless the window overflowed its capacity.
	Sampled int
	// Min and Max are the exact extremes of all Count values.
	Min, Max int64
	// MinAt and MaxAt are the 0-based positions within the window (in Add
	// order) of the first occurrence of Min and Max, so a caller that knows the
	// cycle number of the window's first value can name the cycle of a spike.
	MinAt, MaxAt int64
	// Mean is the arithmetic mean of all Count values.
	Mean float64
	// StdDev is the population standard deviation of all Count values
	// (divisor n, not n−1).
	StdDev float64
	// P50 … P9999 are the nearest-rank percentiles 50, 90, 99, 99.9 and 99.99.
	P50, P90, P99, P999, P9999 int64
	// Approximate is true when Count > Sampled: the percentiles then come from
	// a uniform random sample of Sampled values out of Count (Min, Max, Mean
	// and StdDev stay exact).
	Approximate bool
}

// Window accumulates values for one measurement window and reports exact
// statistics for it. The caller decides when a window ends (after a number of
// values or an amount of time): it calls Snapshot and then Reset.
//
// Count, Min, Max, Mean and StdDev are always exact and cover every value.
// Percentiles are exact (computed from every value, sorted when the snapshot is
// taken) as long as the window holds at most its capacity; beyond that the
// window keeps a uniform random sample of capacity values (reservoir sampling,
// deterministic per window) and Summary.Approximate says so. Size the capacity
// for the longest window at the highest cycle rate (a 10 s window at 4 kHz
// needs 40 000) and percentiles stay exact.
//
// Mean and variance use Welford's update on values shifted by the window's
// first value, so a sequence such as 1e9 + small jitter keeps its precision.
//
// A Window is not safe for concurrent use.
type Window struct {
	values []int64 // len == capacity; values[:held] are valid
	held   int     // number of valid entries in values
	sorted bool    // values[:held] are in ascending order

	count        int64
	min, max     int64
	minAt, maxAt int64
	shift        int64   // first value of the window
	mean, m2     float64 // Welford state of (v − shift)

	rng uint64 // reservoir sampling state (splitmix64)
}

// reservoirSeed seeds the reservoir sampler at every Reset, so a window's
// result depends only on the values fed into it.
const reservoirSeed = 0x9e3779b97f4a7c15

// NewWindow returns a window that keeps up to capacity values for exact
// percentiles. All memory is allocated here; Add never allocates.
func NewWindow(capacity int) (*Window, error) {
	if capacity < 1 {
		return nil, fmt.Errorf("window capacity %d, want ≥ 1: %w", capacity, ErrInvalidArgument)
	}
	return &Window{values: make([]int64, capacity), rng: reservoirSeed}, nil
}

// Capacity returns the number of values the window keeps for percentiles.
func (w *Window) Capacity() int { return len(w.values) }

// Count returns the number of values added since the last Reset.
func (w *Window) Count() int64 { return w.count }

// Add records one value. It does not allocate.
func (w *Window) Add(v int64) {
	if w.count == 0 {
		w.min, w.max, w.minAt, w.maxAt, w.shift = v, v, 0, 0, v
	} else if v < w.min {
		w.min, w.minAt = v, w.count
	} else if v > w.max {
		w.max, w.maxAt = v, w.count
	}
	w.count++

	x := float64(v - w.shift)
	d := x - w.mean
	w.mean += d / float64(w.count)
	w.m2 += d * (x - w.mean)

	w.sorted = false
	if w.held < len(w.values) {
		w.values[w.held] = v
		w.held++
		return
	}
	// Reservoir sampling (Algorithm R): the count-th value replaces a random
	// slot with probability capacity/count.
	if j := w.nextBelow(uint64(w.count)); j < uint64(len(w.values)) {
		w.values[j] = v
	}
}

// nextBelow returns a pseudo-random integer in [0, n) (splitmix64 scaled by a
// 128-bit multiply; the bias is below 2^-40 for any realistic n).
func (w *Window) nextBelow(n uint64) uint64 {
	w.rng += 0x9e3779b97f4a7c15
	z := w.rng
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	hi, _ := bits.Mul64(z, n)
	return hi
}

// Snapshot returns the statistics of the values added since the last Reset.
// It sorts the kept values in place (the window's contents as a multiset do not
// change, so Add may continue afterwards) and does not allocate.
func (w *Window) Snapshot() Summary {
	if w.count == 0 {
		return Summary{}
	}
	w.sort()
	vals := w.values[:w.held]
	return Summary{
		Count:       w.count,
		Sampled:     w.held,
		Min:         w.min,
		Max:         w.max,
		MinAt:       w.minAt,
		MaxAt:       w.maxAt,
		Mean:        float64(w.shift) + w.mean,
		StdDev:      math.Sqrt(max(w.m2, 0) / float64(w.count)),
		P50:         PercentileSorted(vals, 0.50),
		P90:         PercentileSorted(vals, 0.90),
		P99:         PercentileSorted(vals, 0.99),
		P999:        PercentileSorted(vals, 0.999),
		P9999:       PercentileSorted(vals, 0.9999),
		Approximate: w.count > int64(w.held),
	}
}

// Percentile returns the nearest-rank q-quantile of the kept values (exact
// unless the window overflowed its capacity), or 0 for an empty window. Like
// Snapshot it sorts in place and does not allocate.
func (w *Window) Percentile(q float64) int64 {
	w.sort()
	return PercentileSorted(w.values[:w.held], q)
}

// Values returns the kept values (all values unless the window overflowed its
// capacity), sorted ascending. The slice aliases the window's buffer: it is
// valid until the next Add or Reset and must not be modified. Use it to feed
// Bins or CentralInterval with a window's data without copying.
func (w *Window) Values() []int64 {
	w.sort()
	return w.values[:w.held]
}

func (w *Window) sort() {
	if !w.sorted {
		slices.Sort(w.values[:w.held])
		w.sorted = true
	}
}

// Reset empties the window for the next measurement period, keeping its
// buffer. It does not allocate.
func (w *Window) Reset() {
	*w = Window{values: w.values, rng: reservoirSeed}
}

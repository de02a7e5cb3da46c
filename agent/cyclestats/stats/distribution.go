package stats

import (
	"fmt"
	"math/bits"
	"slices"
)

// Bin is one bin of an equal-width distribution report.
type Bin struct {
	// Lower and Upper are the bin's edges. A value v belongs to the bin when
	// Lower ≤ v < Upper; the last bin also holds v == Upper (the maximum).
	// The edges are float64 because the width (max−min)/n need not be whole.
	Lower, Upper float64
	// Count is the number of values in the bin.
	Count int
	// Percent is Count as a percentage (0–100) of all values.
	Percent float64
}

// Bins splits the range [min, max] of values into n bins of equal width and
// counts the values in each, the way EtherCAT master jitter reports publish a
// distribution (IgH write-ups use n = 5). Bin membership is decided in exact
// integer arithmetic: v falls into bin ⌊(v−min)·n / (max−min)⌋, the maximum
// into the last bin. When all values are equal every bin has zero width at that
// value and the first bin holds them all. values may be in any order and is
// not modified.
func Bins(values []int64, n int) ([]Bin, error) {
	if n < 1 {
		return nil, fmt.Errorf("bin count %d, want ≥ 1: %w", n, ErrInvalidArgument)
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("distribution bins: %w", ErrNoValues)
	}
	lo, hi := slices.Min(values), slices.Max(values)
	span := uint64(hi) - uint64(lo) // exact even when hi−lo overflows int64

	bins := make([]Bin, n)
	width := float64(span) / float64(n)
	for i := range bins {
		bins[i].Lower = float64(lo) + float64(i)*width
		bins[i].Upper = float64(lo) + float64(i+1)*width
	}
	bins[n-1].Upper = float64(hi)

	for _, v := range values {
		i := 0
		if span > 0 {
			// (v−lo)·n / span without overflow: the quotient is ≤ n, so the
			// high word of the product is below span and Div64 cannot panic.
			ph, pl := bits.Mul64(uint64(v)-uint64(lo), uint64(n))
			q, _ := bits.Div64(ph, pl, span)
			i = int(min(q, uint64(n-1)))
		}
		bins[i].Count++
	}
	for i := range bins {
		bins[i].Percent = 100 * float64(bins[i].Count) / float64(len(values))
	}
	return bins, nil
}

// Interval is a symmetric interval [Center−HalfWidth, Center+HalfWidth] and the
// share of values it holds.
type Interval struct {
	// Center is the point the interval is symmetric around.
	Center int64
	// HalfWidth is the smallest h ≥ 0 such that |v − Center| ≤ h holds for at
	// least the requested fraction of the values.
	HalfWidth int64
	// Lower and Upper are Center−HalfWidth and Center+HalfWidth.
	Lower, Upper int64
	// Count is the number of values inside the interval (edges included).
	Count int
	// Fraction is Count divided by the number of values; it is at least the
	// requested fraction and exceeds it when values tie at the edges.
	Fraction float64
}

// SymmetricInterval returns the narrowest interval symmetric around center that
// holds at least fraction (0 < fraction ≤ 1) of values: its half-width is the
// nearest-rank fraction-quantile of |v − center|. This is the "95 % of cycles
// fall within target ± h" figure; pass the configured cycle time as center for
// periods, or 0 for signed jitter. values is not modified.
func SymmetricInterval(values []int64, center int64, fraction float64) (Interval, error) {
	if !(fraction > 0 && fraction <= 1) {
		return Interval{}, fmt.Errorf("interval fraction %v, want (0, 1]: %w", fraction, ErrInvalidArgument)
	}
	if len(values) == 0 {
		return Interval{}, fmt.Errorf("symmetric interval: %w", ErrNoValues)
	}
	dev := make([]int64, len(values))
	for i, v := range values {
		dev[i] = absDiff(v, center)
	}
	slices.Sort(dev)
	h := PercentileSorted(dev, fraction)
	inside, _ := slices.BinarySearch(dev, h+1) // count of deviations ≤ h
	if h == maxInt64 {
		inside = len(dev)
	}
	return Interval{
		Center:    center,
		HalfWidth: h,
		Lower:     saturatingAdd(center, -h),
		Upper:     saturatingAdd(center, h),
		Count:     inside,
		Fraction:  float64(inside) / float64(len(values)),
	}, nil
}

// CentralInterval returns the narrowest interval symmetric around the median
// (the nearest-rank p50) of values that holds at least fraction of them. It is
// SymmetricInterval with the median as center; use SymmetricInterval directly
// to centre on the target cycle time instead. values is not modified.
func CentralInterval(values []int64, fraction float64) (Interval, error) {
	if len(values) == 0 {
		return Interval{}, fmt.Errorf("central interval: %w", ErrNoValues)
	}
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	return SymmetricInterval(values, PercentileSorted(sorted, 0.5), fraction)
}

const maxInt64 = 1<<63 - 1

// absDiff returns |a − b|, saturated at the largest int64.
func absDiff(a, b int64) int64 {
	var d uint64
	if a >= b {
		d = uint64(a) - uint64(b)
	} else {
		d = uint64(b) - uint64(a)
	}
	return int64(min(d, maxInt64))
}

// saturatingAdd returns a + b clamped to the int64 range.
func saturatingAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return maxInt64
	case a < 0 && b < 0 && s >= 0:
		return -maxInt64 - 1
	}
	return s
}

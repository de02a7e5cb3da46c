package stats

import "math"

// quantileScale is the resolution q is rounded to before computing a rank.
const quantileScale = 1_000_000

// NearestRank returns the 1-based nearest rank ⌈q·n⌉ for n values, clamped to
// [1, n]. q is rounded to a multiple of 1e-6 first (see the package
// documentation). It returns 0 when n < 1. q ≤ 0 gives rank 1, q ≥ 1 gives n.
func NearestRank(q float64, n int64) int64 {
	if n < 1 {
		return 0
	}
	if !(q > 0) { // also catches NaN
		return 1
	}
	if q >= 1 {
		return n
	}
	parts := int64(math.Round(q * quantileScale))
	// n·parts stays far below 2^63 for any n a window or histogram can hold
	// (n < 9.2e12).
	rank := (n*parts + quantileScale - 1) / quantileScale
	return min(max(rank, 1), n)
}

// PercentileSorted returns the nearest-rank q-quantile of values, which must be
// sorted in ascending order. It returns 0 for an empty slice.
func PercentileSorted(sorted []int64, q float64) int64 {
	r := NearestRank(q, int64(len(sorted)))
	if r == 0 {
		return 0
	}
	return sorted[r-1]
}

package stats

import "fmt"

// LinearHistogram counts values in bins of equal width starting at Origin:
// bin i holds Origin + i·BinWidth ≤ v < Origin + (i+1)·BinWidth. Values below
// Origin are counted in Underflow, values at or above the last bin's upper edge
// in Overflow. With BinWidth 1000 (1 µs for nanosecond values) and Origin 0
// it is cyclictest's histogram: bin k counts latencies of k whole microseconds
// (the value truncated to µs).
//
// The fields are exported so the histogram can be read directly and built by
// ParseCyclictestJSON; BinWidth must be positive. Use NewLinearHistogram to get
// a checked one. Add does not allocate.
type LinearHistogram struct {
	// Origin is the lower edge of bin 0.
	Origin int64
	// BinWidth is the width of every bin, > 0.
	BinWidth int64
	// Bins holds the count of each bin.
	Bins []uint64
	// Underflow counts values below Origin.
	Underflow uint64
	// Overflow counts values at or above Origin + len(Bins)·BinWidth.
	Overflow uint64
}

// NewLinearHistogram returns a histogram with n bins of width binWidth
// starting at origin. For a cyclictest-compatible histogram of nanosecond
// latencies use NewLinearHistogram(0, 1000, n) (cyclictest's -h n).
func NewLinearHistogram(origin, binWidth int64, n int) (*LinearHistogram, error) {
	if binWidth < 1 {
		return nil, fmt.Errorf("histogram bin width %d, want ≥ 1: %w", binWidth, ErrInvalidArgument)
	}
	if n < 1 {
		return nil, fmt.Errorf("histogram bin count %d, want ≥ 1: %w", n, ErrInvalidArgument)
	}
	return &LinearHistogram{Origin: origin, BinWidth: binWidth, Bins: make([]uint64, n)}, nil
}

// Add counts one value. It does not allocate.
func (h *LinearHistogram) Add(v int64) {
	if v < h.Origin {
		h.Underflow++
		return
	}
	// Unsigned difference: exact even when v − Origin overflows int64.
	i := (uint64(v) - uint64(h.Origin)) / uint64(h.BinWidth)
	if i >= uint64(len(h.Bins)) {
		h.Overflow++
		return
	}
	h.Bins[i]++
}

// Total returns the number of values counted, including under- and overflow.
func (h *LinearHistogram) Total() uint64 {
	t := h.Underflow + h.Overflow
	for _, c := range h.Bins {
		t += c
	}
	return t
}

// Upper returns the upper edge of the last bin: values at or above it overflow.
func (h *LinearHistogram) Upper() int64 {
	return h.Origin + int64(len(h.Bins))*h.BinWidth
}

// Percentile returns the nearest-rank q-quantile of the counted values as the
// lower edge of the bin holding the ⌈q·Total⌉-th smallest value, which is the
// value truncated to the bin width (for cyclictest data: exactly the whole
// microseconds cyclictest recorded). inRange is false when the histogram is
// empty (v = 0) or the ranked value lies in the underflow (v = Origin, an upper
// bound) or the overflow (v = Upper(), a lower bound).
func (h *LinearHistogram) Percentile(q float64) (v int64, inRange bool) {
	total := h.Total()
	r := uint64(NearestRank(q, int64(total)))
	if r == 0 {
		return 0, false
	}
	if r <= h.Underflow {
		return h.Origin, false
	}
	seen := h.Underflow
	for i, c := range h.Bins {
		seen += c
		if r <= seen {
			return h.Origin + int64(i)*h.BinWidth, true
		}
	}
	return h.Upper(), false
}

// Merge adds the counts of o to h. Both must have the same Origin, BinWidth and
// number of bins.
func (h *LinearHistogram) Merge(o *LinearHistogram) error {
	if o.Origin != h.Origin || o.BinWidth != h.BinWidth || len(o.Bins) != len(h.Bins) {
		return fmt.Errorf("merge histogram (origin %d, width %d, %d bins) into (origin %d, width %d, %d bins): %w",
			o.Origin, o.BinWidth, len(o.Bins), h.Origin, h.BinWidth, len(h.Bins), ErrInvalidArgument)
	}
	for i, c := range o.Bins {
		h.Bins[i] += c
	}
	h.Underflow += o.Underflow
	h.Overflow += o.Overflow
	return nil
}

// Reset zeroes all counts, keeping the bins. It does not allocate.
func (h *LinearHistogram) Reset() {
	clear(h.Bins)
	h.Underflow, h.Overflow = 0, 0
}

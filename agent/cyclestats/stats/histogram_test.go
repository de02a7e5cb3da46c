package stats

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestLinearHistogramAdd(t *testing.T) {
	tests := []struct {
		name                string
		origin, width       int64
		n                   int
		values              []int64
		wantBins            []uint64
		wantUnder, wantOver uint64
	}{
		{
			name: "1 µs bins truncate like cyclictest", origin: 0, width: 1000, n: 10,
			values:    []int64{0, 999, 1000, 1999, 5500, 9999, 10_000, 123_456, -1},
			wantBins:  []uint64{2, 2, 0, 0, 0, 1, 0, 0, 0, 1},
			wantUnder: 1, wantOver: 2,
		},
		{
			name: "signed jitter around zero", origin: -5000, width: 1000, n: 10,
			values:    []int64{-5000, -1, 0, 4999, 5000, -5001, -3999},
			wantBins:  []uint64{1, 1, 0, 0, 1, 1, 0, 0, 0, 1},
			wantUnder: 1, wantOver: 1,
		},
		{
			name: "extremes do not overflow the index", origin: math.MinInt64, width: 1, n: 4,
			values:   []int64{math.MinInt64, math.MinInt64 + 3, math.MinInt64 + 4, math.MaxInt64},
			wantBins: []uint64{1, 0, 0, 1},
			wantOver: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := NewLinearHistogram(tt.origin, tt.width, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tt.values {
				h.Add(v)
			}
			if !slices.Equal(h.Bins, tt.wantBins) || h.Underflow != tt.wantUnder || h.Overflow != tt.wantOver {
				t.Errorf("bins %v under %d over %d, want %v %d %d", h.Bins, h.Underflow, h.Overflow, tt.wantBins, tt.wantUnder, tt.wantOver)
			}
			if h.Total() != uint64(len(tt.values)) {
				t.Errorf("Total() = %d, want %d", h.Total(), len(tt.values))
			}
		})
	}
}

// TestLinearHistogramKnownDistribution bins a triangular distribution whose
// bin counts are known in closed form: value k µs + 500 ns appears k+1 times
// for k = 0…9.
func TestLinearHistogramKnownDistribution(t *testing.T) {
	h, err := NewLinearHistogram(0, 1000, 8)
	if err != nil {
		t.Fatal(err)
	}
	for k := range int64(10) {
		for range k + 1 {
			h.Add(k*1000 + 500)
		}
	}
	want := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	if !slices.Equal(h.Bins, want) || h.Overflow != 9+10 || h.Underflow != 0 {
		t.Errorf("bins %v overflow %d, want %v 19", h.Bins, h.Overflow, want)
	}
	if h.Upper() != 8000 {
		t.Errorf("Upper() = %d, want 8000", h.Upper())
	}
}

func TestLinearHistogramPercentile(t *testing.T) {
	uniform, _ := NewLinearHistogram(0, 1000, 1001)
	for k := int64(1); k <= 1000; k++ {
		uniform.Add(k*1000 + 500) // k µs and a half
	}
	small, _ := NewLinearHistogram(0, 1000, 10)
	for k := range int64(100) { // 0…99 µs; 90 overflow
		small.Add(k * 1000)
	}
	shifted, _ := NewLinearHistogram(100, 10, 3) // bins [100,110) [110,120) [120,130)
	for _, v := range []int64{50, 60, 105, 115, 125, 200} {
		shifted.Add(v)
	}
	empty, _ := NewLinearHistogram(0, 1000, 10)

	tests := []struct {
		name        string
		h           *LinearHistogram
		q           float64
		want        int64
		wantInRange bool
	}{
		{"p99 of 1..1000 µs", uniform, 0.99, 990_000, true},
		{"p99.9 of 1..1000 µs", uniform, 0.999, 999_000, true},
		{"p50 of 1..1000 µs", uniform, 0.5, 500_000, true},
		{"min of 1..1000 µs", uniform, 0, 1000, true},
		{"p10 just inside the bins", small, 0.10, 9000, true},
		{"p50 in the overflow is a lower bound", small, 0.5, 10_000, false},
		{"p20 in the underflow is an upper bound", shifted, 0.2, 100, false},
		{"p50 lower edge of the first shifted bin", shifted, 0.5, 100, true},
		{"p66 rank 4 in the second bin", shifted, 0.66, 110, true},
		{"p67 rank 5 in the third bin", shifted, 0.67, 120, true},
		{"max in the overflow", shifted, 1, 130, false},
		{"empty", empty, 0.5, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, in := tt.h.Percentile(tt.q)
			if got != tt.want || in != tt.wantInRange {
				t.Errorf("Percentile(%v) = %d, %v; want %d, %v", tt.q, got, in, tt.want, tt.wantInRange)
			}
		})
	}
}

func TestLinearHistogramMergeReset(t *testing.T) {
	a, _ := NewLinearHistogram(0, 10, 3)
	b, _ := NewLinearHistogram(0, 10, 3)
	for _, v := range []int64{1, 15, 40, -1} {
		a.Add(v)
	}
	for _, v := range []int64{2, 25, 25} {
		b.Add(v)
	}
	if err := a.Merge(b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Bins, []uint64{2, 1, 2}) || a.Overflow != 1 || a.Underflow != 1 {
		t.Errorf("merged: bins %v over %d under %d", a.Bins, a.Overflow, a.Underflow)
	}
	for _, other := range []*LinearHistogram{
		{Origin: 1, BinWidth: 10, Bins: make([]uint64, 3)},
		{Origin: 0, BinWidth: 5, Bins: make([]uint64, 3)},
		{Origin: 0, BinWidth: 10, Bins: make([]uint64, 4)},
	} {
		if err := a.Merge(other); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("merge of origin %d width %d bins %d: error %v, want ErrInvalidArgument", other.Origin, other.BinWidth, len(other.Bins), err)
		}
	}
	a.Reset()
	if a.Total() != 0 || len(a.Bins) != 3 {
		t.Errorf("after Reset: total %d, %d bins", a.Total(), len(a.Bins))
	}
}

func TestNewLinearHistogramErrors(t *testing.T) {
	for _, c := range []struct {
		width int64
		n     int
	}{{0, 10}, {-1, 10}, {1000, 0}, {1000, -3}} {
		if _, err := NewLinearHistogram(0, c.width, c.n); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewLinearHistogram(0, %d, %d) error %v, want ErrInvalidArgument", c.width, c.n, err)
		}
	}
}

func TestLinearHistogramAddAllocs(t *testing.T) {
	h, err := NewLinearHistogram(0, 1000, 100)
	if err != nil {
		t.Fatal(err)
	}
	var v int64
	if a := testing.AllocsPerRun(1000, func() { v += 7919; h.Add(v % 200_000) }); a != 0 {
		t.Errorf("Add: %v allocs, want 0", a)
	}
}

func BenchmarkLinearHistogramAdd(b *testing.B) {
	vals := jitteryPeriods(tenSecondsAt4kHz)
	h, err := NewLinearHistogram(0, 1000, 1000)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		h.Add(vals[i] - 240_000)
		if i++; i == len(vals) {
			i = 0
		}
	}
}

package stats

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestBins(t *testing.T) {
	tests := []struct {
		name   string
		values []int64
		n      int
		want   []Bin
	}{
		{
			name:   "0..10 in 5 bins of width 2, max in the last",
			values: seq(0, 10),
			n:      5,
			want: []Bin{
				{0, 2, 2, 200.0 / 11}, {2, 4, 2, 200.0 / 11}, {4, 6, 2, 200.0 / 11},
				{6, 8, 2, 200.0 / 11}, {8, 10, 3, 300.0 / 11},
			},
		},
		{
			name:   "0..99 in 5 bins of width 19.8",
			values: seq(0, 99),
			n:      5,
			want: []Bin{
				{0, 19.8, 20, 20}, {19.8, 39.6, 20, 20}, {39.6, 59.4, 20, 20},
				{59.4, 79.2, 20, 20}, {79.2, 99, 20, 20},
			},
		},
		{
			// Periods like the IgH RK3576 run: 996.954–1003.262 µs, mostly
			// near 1 ms, one long and one short outlier.
			name:   "cycle periods with outliers",
			values: []int64{996_954, 999_800, 999_900, 1_000_000, 1_000_000, 1_000_100, 1_000_150, 1_003_262},
			n:      5,
			// width (1003262−996954)/5 = 1261.6
			want: []Bin{
				{996_954, 998_215.6, 1, 12.5}, {998_215.6, 999_477.2, 0, 0},
				{999_477.2, 1_000_738.8, 6, 75}, {1_000_738.8, 1_002_000.4, 0, 0},
				{1_002_000.4, 1_003_262, 1, 12.5},
			},
		},
		{
			name:   "all values equal: first bin holds them",
			values: []int64{5, 5, 5},
			n:      3,
			want:   []Bin{{5, 5, 3, 100}, {5, 5, 0, 0}, {5, 5, 0, 0}},
		},
		{
			name:   "one bin",
			values: []int64{3, -2, 8},
			n:      1,
			want:   []Bin{{-2, 8, 3, 100}},
		},
		{
			name:   "full int64 range does not overflow",
			values: []int64{math.MinInt64, math.MaxInt64, 0},
			n:      2,
			want:   []Bin{{math.MinInt64, 0, 1, 100.0 / 3}, {0, math.MaxInt64, 2, 200.0 / 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.values)
			got, err := Bins(in, tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(in, tt.values) {
				t.Errorf("Bins modified its input: %v", in)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d bins, want %d", len(got), len(tt.want))
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if g.Count != w.Count || !closeTo(g.Lower, w.Lower, 1e-12) || !closeTo(g.Upper, w.Upper, 1e-12) || !closeTo(g.Percent, w.Percent, 1e-12) {
					t.Errorf("bin %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestBinsErrors(t *testing.T) {
	if _, err := Bins([]int64{1}, 0); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("n=0: error %v, want ErrInvalidArgument", err)
	}
	if _, err := Bins(nil, 5); !errors.Is(err, ErrNoValues) {
		t.Errorf("no values: error %v, want ErrNoValues", err)
	}
}

// ninetyFiveTight returns 100 periods around 1 ms: 95 within ±2 ns and five
// outliers at +10, −20, +30, −40 and +50 ns.
func ninetyFiveTight() []int64 {
	var v []int64
	for i := range 95 {
		v = append(v, 1_000_000+int64(i%5)-2)
	}
	return append(v, 1_000_010, 999_980, 1_000_030, 999_960, 1_000_050)
}

func TestSymmetricInterval(t *testing.T) {
	tests := []struct {
		name     string
		values   []int64
		center   int64
		fraction float64
		want     Interval
	}{
		{
			name:   "95 % of periods within target ± 2",
			values: ninetyFiveTight(), center: 1_000_000, fraction: 0.95,
			want: Interval{Center: 1_000_000, HalfWidth: 2, Lower: 999_998, Upper: 1_000_002, Count: 95, Fraction: 0.95},
		},
		{
			name:   "96 % needs the first outlier",
			values: ninetyFiveTight(), center: 1_000_000, fraction: 0.96,
			want: Interval{Center: 1_000_000, HalfWidth: 10, Lower: 999_990, Upper: 1_000_010, Count: 96, Fraction: 0.96},
		},
		{
			name:   "all of them",
			values: ninetyFiveTight(), center: 1_000_000, fraction: 1,
			want: Interval{Center: 1_000_000, HalfWidth: 50, Lower: 999_950, Upper: 1_000_050, Count: 100, Fraction: 1},
		},
		{
			name:   "ties at the edge hold more than asked",
			values: seq(-5, 5), center: 0, fraction: 0.5,
			// |v| sorted: 0 1 1 2 2 3 3 4 4 5 5; rank ⌈5.5⌉ = 6 → 3; 7 values ≤ 3
			want: Interval{Center: 0, HalfWidth: 3, Lower: -3, Upper: 3, Count: 7, Fraction: 7.0 / 11},
		},
		{
			name:   "off-centre data",
			values: []int64{10, 11, 12}, center: 0, fraction: 0.5,
			want: Interval{Center: 0, HalfWidth: 11, Lower: -11, Upper: 11, Count: 2, Fraction: 2.0 / 3},
		},
		{
			name:   "one value",
			values: []int64{7}, center: 7, fraction: 0.95,
			want: Interval{Center: 7, HalfWidth: 0, Lower: 7, Upper: 7, Count: 1, Fraction: 1},
		},
		{
			name:   "saturates at the int64 range",
			values: []int64{math.MinInt64, math.MaxInt64}, center: math.MaxInt64, fraction: 1,
			want: Interval{Center: math.MaxInt64, HalfWidth: math.MaxInt64, Lower: 0, Upper: math.MaxInt64, Count: 2, Fraction: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.values)
			got, err := SymmetricInterval(in, tt.center, tt.fraction)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(in, tt.values) {
				t.Errorf("SymmetricInterval modified its input")
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestCentralInterval(t *testing.T) {
	tests := []struct {
		name     string
		values   []int64
		fraction float64
		want     Interval
	}{
		{
			name:   "centred on the median, not the mean",
			values: []int64{100, 0, 0, 1, 0}, fraction: 0.8,
			// median 0 (mean 20.2); |v| sorted 0 0 0 1 100; rank 4 → 1
			want: Interval{Center: 0, HalfWidth: 1, Lower: -1, Upper: 1, Count: 4, Fraction: 0.8},
		},
		{
			name:   "95 % of tight periods",
			values: ninetyFiveTight(), fraction: 0.95,
			want: Interval{Center: 1_000_000, HalfWidth: 2, Lower: 999_998, Upper: 1_000_002, Count: 95, Fraction: 0.95},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CentralInterval(tt.values, tt.fraction)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestIntervalErrors(t *testing.T) {
	for _, f := range []float64{0, -0.5, 1.5, math.NaN()} {
		if _, err := SymmetricInterval([]int64{1}, 0, f); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("fraction %v: error %v, want ErrInvalidArgument", f, err)
		}
		if _, err := CentralInterval([]int64{1}, f); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("central, fraction %v: error %v, want ErrInvalidArgument", f, err)
		}
	}
	if _, err := SymmetricInterval(nil, 0, 0.95); !errors.Is(err, ErrNoValues) {
		t.Errorf("no values: error %v, want ErrNoValues", err)
	}
	if _, err := CentralInterval(nil, 0.95); !errors.Is(err, ErrNoValues) {
		t.Errorf("central, no values: error %v, want ErrNoValues", err)
	}
}

package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// seq returns lo, lo+1, …, hi.
func seq(lo, hi int64) []int64 {
	s := make([]int64, 0, hi-lo+1)
	for v := lo; v <= hi; v++ {
		s = append(s, v)
	}
	return s
}

func reversed(vals []int64) []int64 {
	out := slices.Clone(vals)
	slices.Reverse(out)
	return out
}

func offset(vals []int64, by int64) []int64 {
	out := make([]int64, len(vals))
	for i, v := range vals {
		out[i] = v + by
	}
	return out
}

func closeTo(got, want, tol float64) bool {
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

func TestWindowSnapshot(t *testing.T) {
	classic := []int64{2, 4, 4, 4, 5, 5, 7, 9} // mean 5, population σ 2
	tests := []struct {
		name   string
		values []int64
		want   Summary
	}{
		{
			name:   "empty window is all zero",
			values: nil,
			want:   Summary{},
		},
		{
			name:   "one value",
			values: []int64{42},
			want: Summary{Count: 1, Sampled: 1, Min: 42, Max: 42, Mean: 42,
				P50: 42, P90: 42, P99: 42, P999: 42, P9999: 42},
		},
		{
			name:   "identical values",
			values: []int64{7, 7, 7, 7, 7},
			want: Summary{Count: 5, Sampled: 5, Min: 7, Max: 7, Mean: 7,
				P50: 7, P90: 7, P99: 7, P999: 7, P9999: 7},
		},
		{
			name:   "classic sequence",
			values: classic,
			want: Summary{Count: 8, Sampled: 8, Min: 2, Max: 9, MinAt: 0, MaxAt: 7, Mean: 5, StdDev: 2,
				P50: 4, P90: 9, P99: 9, P999: 9, P9999: 9},
		},
		{
			name:   "classic sequence on a 1 s offset",
			values: offset(classic, 1_000_000_000),
			want: Summary{Count: 8, Sampled: 8, Min: 1_000_000_002, Max: 1_000_000_009, MaxAt: 7,
				Mean: 1_000_000_005, StdDev: 2,
				P50: 1_000_000_004, P90: 1_000_000_009, P99: 1_000_000_009, P999: 1_000_000_009, P9999: 1_000_000_009},
		},
		{
			name:   "classic sequence on a 1e15 offset",
			values: offset(classic, 1_000_000_000_000_000),
			want: Summary{Count: 8, Sampled: 8, Min: 1e15 + 2, Max: 1e15 + 9, MaxAt: 7,
				Mean: 1e15 + 5, StdDev: 2,
				P50: 1e15 + 4, P90: 1e15 + 9, P99: 1e15 + 9, P999: 1e15 + 9, P9999: 1e15 + 9},
		},
		{
			name:   "uniform 1..1000 ascending",
			values: seq(1, 1000),
			want: Summary{Count: 1000, Sampled: 1000, Min: 1, Max: 1000, MinAt: 0, MaxAt: 999,
				Mean: 500.5, StdDev: math.Sqrt((1000*1000 - 1) / 12.0),
				P50: 500, P90: 900, P99: 990, P999: 999, P9999: 1000},
		},
		{
			name:   "uniform 1..1000 descending",
			values: reversed(seq(1, 1000)),
			want: Summary{Count: 1000, Sampled: 1000, Min: 1, Max: 1000, MinAt: 999, MaxAt: 0,
				Mean: 500.5, StdDev: math.Sqrt((1000*1000 - 1) / 12.0),
				P50: 500, P90: 900, P99: 990, P999: 999, P9999: 1000},
		},
		{
			name:   "negative values (signed jitter)",
			values: []int64{-3, 3, -1, 1},
			want: Summary{Count: 4, Sampled: 4, Min: -3, Max: 3, MinAt: 0, MaxAt: 1, Mean: 0, StdDev: math.Sqrt(5),
				P50: -1, P90: 3, P99: 3, P999: 3, P9999: 3},
		},
		{
			name:   "first occurrence of a repeated extreme",
			values: []int64{5, 1, 9, 1, 9},
			want: Summary{Count: 5, Sampled: 5, Min: 1, Max: 9, MinAt: 1, MaxAt: 2, Mean: 5, StdDev: math.Sqrt(12.8),
				P50: 5, P90: 9, P99: 9, P999: 9, P9999: 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := NewWindow(1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tt.values {
				w.Add(v)
			}
			got := w.Snapshot()
			if !closeTo(got.Mean, tt.want.Mean, 1e-12) || !closeTo(got.StdDev, tt.want.StdDev, 1e-9) {
				t.Errorf("mean %v stddev %v, want %v %v", got.Mean, got.StdDev, tt.want.Mean, tt.want.StdDev)
			}
			got.Mean, got.StdDev = tt.want.Mean, tt.want.StdDev
			if got != tt.want {
				t.Errorf("Snapshot() =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
}

// TestWindowLargeOffsetStdDev checks mean and σ of many values of the form
// 1e9 + small jitter against exact integer arithmetic.
func TestWindowLargeOffsetStdDev(t *testing.T) {
	const n = 100_000
	const base = 1_000_000_000
	w, err := NewWindow(n)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sumSq int64 // of the jitter only: exact
	for i := range int64(n) {
		j := (i*7919)%13 - 6 // −6…6
		w.Add(base + j)
		sum += j
		sumSq += j * j
	}
	wantMean := base + float64(sum)/n
	wantVar := (float64(n)*float64(sumSq) - float64(sum)*float64(sum)) / (float64(n) * float64(n))
	s := w.Snapshot()
	if !closeTo(s.Mean, wantMean, 1e-15) {
		t.Errorf("mean %.9f, want %.9f", s.Mean, wantMean)
	}
	if !closeTo(s.StdDev, math.Sqrt(wantVar), 1e-9) {
		t.Errorf("stddev %.12f, want %.12f", s.StdDev, math.Sqrt(wantVar))
	}
}

func TestWindowOverCapacity(t *testing.T) {
	const capacity = 1000
	const n = 100_000
	w, err := NewWindow(capacity)
	if err != nil {
		t.Fatal(err)
	}
	for v := range int64(n) {
		w.Add(v)
	}
	s := w.Snapshot()
	if s.Count != n || s.Sampled != capacity || !s.Approximate {
		t.Fatalf("count %d sampled %d approximate %v, want %d %d true", s.Count, s.Sampled, s.Approximate, n, capacity)
	}
	// Min, max and mean stay exact.
	if s.Min != 0 || s.Max != n-1 || s.MaxAt != n-1 || !closeTo(s.Mean, (n-1)/2.0, 1e-12) {
		t.Errorf("min %d max %d maxAt %d mean %v, want 0 %d %d %v", s.Min, s.Max, s.MaxAt, s.Mean, n-1, n-1, (n-1)/2.0)
	}
	// The sample is a set of distinct input values spread over the whole range.
	vals := w.Values()
	if len(vals) != capacity {
		t.Fatalf("len(Values()) = %d, want %d", len(vals), capacity)
	}
	for i, v := range vals {
		if v < 0 || v >= n || (i > 0 && vals[i-1] >= v) {
			t.Fatalf("sample value %d at %d is out of range or repeated", v, i)
		}
	}
	for _, c := range []struct {
		name string
		got  int64
		want float64
	}{{"p50", s.P50, 0.5 * n}, {"p90", s.P90, 0.9 * n}} {
		if math.Abs(float64(c.got)-c.want) > 0.05*n {
			t.Errorf("%s = %d, want within 5%% of %v (uniform sample)", c.name, c.got, c.want)
		}
	}
}

func TestWindowAtCapacityIsExact(t *testing.T) {
	w, err := NewWindow(1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range seq(1, 1000) {
		w.Add(v)
	}
	if s := w.Snapshot(); s.Approximate || s.P99 != 990 {
		t.Errorf("full window: approximate %v p99 %d, want false 990", s.Approximate, s.P99)
	}
	w.Add(1001)
	if s := w.Snapshot(); !s.Approximate || s.Max != 1001 {
		t.Errorf("one past capacity: approximate %v max %d, want true 1001", s.Approximate, s.Max)
	}
}

func TestWindowAddAfterSnapshot(t *testing.T) {
	w, err := NewWindow(10)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []int64{5, 1, 3} {
		w.Add(v)
	}
	if s := w.Snapshot(); s.P50 != 3 {
		t.Fatalf("p50 of {5,1,3} = %d, want 3", s.P50)
	}
	w.Add(0)
	w.Add(10)
	s := w.Snapshot()
	if s.Count != 5 || s.Min != 0 || s.Max != 10 || s.MinAt != 3 || s.MaxAt != 4 || s.P50 != 3 || s.Mean != 19.0/5 {
		t.Errorf("after more adds: %+v", s)
	}
	if got := w.Percentile(0.2); got != 0 {
		t.Errorf("Percentile(0.2) = %d, want 0", got)
	}
	w.Add(-1)
	if got := w.Percentile(0.2); got != 0 { // {-1,0,1,3,5,10}: rank ⌈1.2⌉ = 2
		t.Errorf("Percentile(0.2) after adding -1 = %d, want 0", got)
	}
	if got := w.Percentile(0.1); got != -1 {
		t.Errorf("Percentile(0.1) = %d, want -1", got)
	}
}

func TestWindowReset(t *testing.T) {
	w, err := NewWindow(4)
	if err != nil {
		t.Fatal(err)
	}
	for v := range int64(10) { // overflow the capacity too
		w.Add(v * 100)
	}
	w.Reset()
	if s := w.Snapshot(); s != (Summary{}) || w.Count() != 0 || len(w.Values()) != 0 {
		t.Fatalf("after Reset: %+v count %d values %v", s, w.Count(), w.Values())
	}
	w.Add(7)
	w.Add(3)
	want := Summary{Count: 2, Sampled: 2, Min: 3, Max: 7, MinAt: 1, Mean: 5, StdDev: 2, P50: 3, P90: 7, P99: 7, P999: 7, P9999: 7}
	if s := w.Snapshot(); s != want {
		t.Errorf("second window: %+v, want %+v", s, want)
	}
	if w.Capacity() != 4 {
		t.Errorf("Capacity() = %d after Reset, want 4", w.Capacity())
	}
}

// TestWindowDeterministicSample checks that a window's sampled percentiles
// depend only on its input, not on earlier windows.
func TestWindowDeterministicSample(t *testing.T) {
	w, err := NewWindow(100)
	if err != nil {
		t.Fatal(err)
	}
	run := func() Summary {
		w.Reset()
		for v := range int64(10_000) {
			w.Add(v)
		}
		return w.Snapshot()
	}
	first := run()
	if second := run(); second != first {
		t.Errorf("same input, different summaries:\n %+v\n %+v", first, second)
	}
}

func TestNewWindowRejectsBadCapacity(t *testing.T) {
	for _, c := range []int{0, -1} {
		if _, err := NewWindow(c); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewWindow(%d) error = %v, want ErrInvalidArgument", c, err)
		}
	}
}

func TestWindowAllocs(t *testing.T) {
	w, err := NewWindow(100)
	if err != nil {
		t.Fatal(err)
	}
	var v int64
	if a := testing.AllocsPerRun(1000, func() { v += 997; w.Add(v % 5000) }); a != 0 {
		t.Errorf("Add (beyond capacity too): %v allocs, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { w.Add(v); _ = w.Snapshot() }); a != 0 {
		t.Errorf("Snapshot: %v allocs, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { w.Add(v); _ = w.Percentile(0.99); _ = w.Values() }); a != 0 {
		t.Errorf("Percentile/Values: %v allocs, want 0", a)
	}
	if a := testing.AllocsPerRun(100, func() { w.Reset() }); a != 0 {
		t.Errorf("Reset: %v allocs, want 0", a)
	}
}

// tenSecondsAt4kHz is the benchmark window: 10 s of cycles at 250 µs.
const tenSecondsAt4kHz = 40_000

// jitteryPeriods returns n periods around 250 µs with normal jitter and rare
// spikes, deterministically.
func jitteryPeriods(n int) []int64 {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]int64, n)
	for i := range out {
		out[i] = 250_000 + int64(r.NormFloat64()*800)
		if r.IntN(1000) == 0 {
			out[i] += 40_000
		}
	}
	return out
}

func BenchmarkWindowAdd(b *testing.B) {
	vals := jitteryPeriods(tenSecondsAt4kHz)
	w, err := NewWindow(tenSecondsAt4kHz)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == len(vals) {
			w.Reset()
			i = 0
		}
		w.Add(vals[i])
		i++
	}
}

func BenchmarkWindowSnapshot(b *testing.B) {
	vals := jitteryPeriods(tenSecondsAt4kHz)
	w, err := NewWindow(tenSecondsAt4kHz)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		w.Reset()
		for _, v := range vals {
			w.Add(v)
		}
		b.StartTimer()
		_ = w.Snapshot()
	}
}

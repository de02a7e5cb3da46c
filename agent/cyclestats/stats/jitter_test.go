package stats

import (
	"slices"
	"testing"
)

func TestJitterFunctions(t *testing.T) {
	tests := []struct {
		name                       string
		prev, wake, target         int64
		wantPeriod, wantJ, wantAbs int64
	}{
		{"on time", 1_000_000, 2_000_000, 1_000_000, 1_000_000, 0, 0},
		{"late", 1_000_000, 2_006_308, 1_000_000, 1_006_308, 6308, 6308},
		{"early", 1_000_000, 1_996_954, 1_000_000, 996_954, -3046, 3046},
		{"250 µs cycle", 0, 252_000, 250_000, 252_000, 2000, 2000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Period(tt.prev, tt.wake); got != tt.wantPeriod {
				t.Errorf("Period = %d, want %d", got, tt.wantPeriod)
			}
			if got := Jitter(tt.prev, tt.wake, tt.target); got != tt.wantJ {
				t.Errorf("Jitter = %d, want %d", got, tt.wantJ)
			}
			if got := AbsJitter(tt.prev, tt.wake, tt.target); got != tt.wantAbs {
				t.Errorf("AbsJitter = %d, want %d", got, tt.wantAbs)
			}
		})
	}
}

func TestPeriodsAndJitters(t *testing.T) {
	wakes := []int64{0, 1000, 2010, 2990, 4000}
	if got, want := Periods(nil, wakes), []int64{1000, 1010, 980, 1010}; !slices.Equal(got, want) {
		t.Errorf("Periods = %v, want %v", got, want)
	}
	if got, want := Jitters([]int64{99}, wakes, 1000), []int64{99, 0, 10, -20, 10}; !slices.Equal(got, want) {
		t.Errorf("Jitters appended = %v, want %v", got, want)
	}
	if got := Periods(nil, wakes[:1]); len(got) != 0 {
		t.Errorf("Periods of one wake = %v, want none", got)
	}
	dst := make([]int64, 0, 8)
	if a := testing.AllocsPerRun(100, func() { dst = Jitters(dst[:0], wakes, 1000) }); a != 0 {
		t.Errorf("Jitters into a big enough dst: %v allocs, want 0", a)
	}
}

func TestJitterTracker(t *testing.T) {
	tr := NewJitterTracker(1000)
	steps := []struct {
		cycle      uint64
		wake       int64
		reset      bool
		wantPeriod int64
		wantJitter int64
		wantOK     bool
	}{
		{cycle: 5, wake: 0},
		{cycle: 6, wake: 1000, wantPeriod: 1000, wantJitter: 0, wantOK: true},
		{cycle: 7, wake: 2010, wantPeriod: 1010, wantJitter: 10, wantOK: true},
		{cycle: 9, wake: 4000}, // cycle 8 lost in the ring: no period
		{cycle: 10, wake: 4995, wantPeriod: 995, wantJitter: -5, wantOK: true},
		{cycle: 10, wake: 6000}, // repeated cycle number
		{cycle: 3, wake: 7000},  // counter went backwards (restart)
		{cycle: 4, wake: 8000, wantPeriod: 1000, wantJitter: 0, wantOK: true},
		{cycle: 5, wake: 9000, reset: true},
		{cycle: 6, wake: 10_001, wantPeriod: 1001, wantJitter: 1, wantOK: true},
		{cycle: 1<<64 - 1, wake: 11_000},
		{cycle: 0, wake: 12_000, wantPeriod: 1000, wantOK: true}, // counter wraps
	}
	for i, s := range steps {
		if s.reset {
			tr.Reset()
		}
		p, j, ok := tr.Observe(s.cycle, s.wake)
		if p != s.wantPeriod || j != s.wantJitter || ok != s.wantOK {
			t.Errorf("step %d Observe(%d, %d) = %d, %d, %v; want %d, %d, %v", i, s.cycle, s.wake, p, j, ok, s.wantPeriod, s.wantJitter, s.wantOK)
		}
	}
	if tr.Target() != 1000 {
		t.Errorf("Target() = %d", tr.Target())
	}
}

func TestJitterTrackerAllocs(t *testing.T) {
	tr := NewJitterTracker(250_000)
	var c uint64
	if a := testing.AllocsPerRun(1000, func() { c++; tr.Observe(c, int64(c)*250_000) }); a != 0 {
		t.Errorf("Observe: %v allocs, want 0", a)
	}
}

func BenchmarkJitterTrackerObserve(b *testing.B) {
	tr := NewJitterTracker(250_000)
	b.ReportAllocs()
	var c uint64
	for b.Loop() {
		c++
		tr.Observe(c, int64(c)*250_000)
	}
}

package cyclestats

import (
	"math"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/shm"
)

// TestTables checks the rows: every quantity and counter has a distinct
// stem and a help text, a quantity a unit, and out-of-range values have
// no row.
func TestTables(t *testing.T) {
	stems := map[string]bool{}
	for q := range NumQuantities {
		info := q.Info()
		if info.Unit != UnitSeconds && info.Unit != UnitRatio {
			t.Errorf("%d: unit %d, want seconds or ratio", q, info.Unit)
		}
		if info.Stem == "" || stems[info.Stem] || info.Help == "" || info.WindowHelp == "" || info.Key == "" {
			t.Errorf("%d: stem %q (repeated: %v), help %q, window help %q, key %q", q, info.Stem, stems[info.Stem], info.Help, info.WindowHelp, info.Key)
		}
		stems[info.Stem] = true
	}
	flags := map[shm.SampleFlags]Counter{}
	for c := range NumCounters {
		info := c.Info()
		if info.Stem == "" || stems[info.Stem] || info.Help == "" {
			t.Errorf("%d: stem %q (repeated: %v), help %q", c, info.Stem, stems[info.Stem], info.Help)
		}
		stems[info.Stem] = true
		if f := info.Flag; f != 0 {
			if f&(f-1) != 0 || c.Segment() {
				t.Errorf("%s: flag %v: want one flag, on a counter the samples advance", c, f)
			}
			if other, ok := flags[f]; ok {
				t.Errorf("%s and %s both count the flag %v", other, c, f)
			}
			flags[f] = c
		}
	}
	for _, q := range []Quantity{-1, NumQuantities} {
		if info := q.Info(); info != (QuantityInfo{}) {
			t.Errorf("Quantity(%d).Info() = %+v, want the zero value", q, info)
		}
	}
	for _, c := range []Counter{-1, NumCounters} {
		if info := c.Info(); info != (CounterInfo{}) {
			t.Errorf("Counter(%d).Info() = %+v, want the zero value", c, info)
		}
	}
	for st := range NumStats {
		if st.String() == "" {
			t.Errorf("Stat(%d) has no name", st)
		}
	}
	if Stat(-1).String() != "" || NumStats.String() != "" {
		t.Error("a Stat out of range has a name")
	}
}

// TestMQTTPlaces checks where the rows put the figures in the MQTT
// statistics: the keys are distinct, the counts of the JSON stats message
// take the places 1, 2, … without a gap, as do the Sparkplug statistics
// metrics (whose places are their aliases), and a figure without a key
// has no place.
func TestMQTTPlaces(t *testing.T) {
	keys := map[string]bool{}
	var json, sparkplug []string
	place := func(list *[]string, n int, what string) {
		t.Helper()
		for len(*list) < n {
			*list = append(*list, "")
		}
		if (*list)[n-1] != "" {
			t.Errorf("%s and %s share place %d", (*list)[n-1], what, n)
		}
		(*list)[n-1] = what
	}
	for c := range NumCounters {
		info := c.Info()
		if info.Key == "" {
			if info.JSON != 0 || info.Sparkplug != 0 {
				t.Errorf("%s has no key but places %d, %d", c, info.JSON, info.Sparkplug)
			}
			continue
		}
		if keys[info.Key] || info.JSON <= 0 || info.Sparkplug < 0 {
			t.Errorf("%s: key %q (repeated: %v), JSON place %d, Sparkplug place %d", c, info.Key, keys[info.Key], info.JSON, info.Sparkplug)
			continue
		}
		keys[info.Key] = true
		place(&json, info.JSON, c.String())
		if info.Sparkplug > 0 {
			place(&sparkplug, info.Sparkplug, c.String())
		}
	}
	for q := range NumQuantities {
		info := q.Info()
		if keys[info.Key] {
			t.Errorf("%s: key %q repeated", q, info.Key)
		}
		keys[info.Key] = true
		for st, n := range info.Sparkplug {
			if n < 0 {
				t.Errorf("%s %s: Sparkplug place %d", q, Stat(st), n)
			}
			if n > 0 {
				place(&sparkplug, n, q.String()+" "+Stat(st).String())
			}
		}
	}
	for what, list := range map[string][]string{"JSON": json, "Sparkplug": sparkplug} {
		for i, s := range list {
			if s == "" {
				t.Errorf("%s place %d is free: the places of a scheme follow each other", what, i+1)
			}
		}
	}
}

// TestDerive checks the figures of samples against values worked out by
// hand: what each flag measures and counts, and that a period needs two
// consecutive cycle numbers.
func TestDerive(t *testing.T) {
	const target = 1_000_000
	// A first sample primes the period; then each case's sample comes as
	// cycle 1 (or, with gap, cycle 3).
	tests := []struct {
		name   string
		change func(*shm.Sample)
		gap    bool
		want   map[Quantity]int64 // raw values; absent means not measured
		counts map[Counter]int64  // absent means 0
	}{
		{
			name: "plain cycle",
			want: map[Quantity]int64{
				QuantityPeriod: target + 3000, QuantityJitter: 3000, QuantityWakeupLatency: 8000,
				QuantityJobDuration: 100_000, QuantityCPULoad: 100_000, QuantityFrameRTT: 20_000,
			},
			counts: map[Counter]int64{CounterCycles: 1},
		},
		{
			name:   "woke early: negative jitter counts by its size",
			change: func(s *shm.Sample) { s.Wake -= 6000; s.Send -= 6000; s.Recv -= 6000; s.End -= 6000 },
			want: map[Quantity]int64{
				QuantityPeriod: target - 3000, QuantityJitter: 3000, QuantityWakeupLatency: 2000,
				QuantityJobDuration: 100_000, QuantityCPULoad: 100_000, QuantityFrameRTT: 20_000,
			},
			counts: map[Counter]int64{CounterCycles: 1},
		},
		{
			name: "gap in the cycle numbers: no period",
			gap:  true,
			want: map[Quantity]int64{
				QuantityWakeupLatency: 8000, QuantityJobDuration: 100_000, QuantityCPULoad: 100_000, QuantityFrameRTT: 20_000,
			},
			counts: map[Counter]int64{CounterCycles: 1},
		},
		{
			name: "lost frame, late answer, WKC error, overrun",
			change: func(s *shm.Sample) {
				s.Flags |= shm.SampleLostFrame | shm.SampleLateAnswer | shm.SampleWKCMismatch | shm.SampleOverrun | shm.SampleSkipped
				s.Skipped = 2
				s.Recv = s.Send
			},
			want: map[Quantity]int64{
				QuantityPeriod: target + 3000, QuantityJitter: 3000, QuantityWakeupLatency: 8000,
				QuantityJobDuration: 100_000, QuantityCPULoad: 100_000,
			},
			counts: map[Counter]int64{
				CounterCycles: 1, CounterLostFrames: 1, CounterLateAnswers: 1, CounterWKCErrors: 1,
				CounterOverruns: 1, CounterSkipped: 2,
			},
		},
		{
			name: "acyclic cycle that overran, woken late by its yield",
			change: func(s *shm.Sample) {
				s.Flags |= shm.SampleAcyclic | shm.SampleAcyclicFrame | shm.SampleOverrun | shm.SampleYieldLate
			},
			want: map[Quantity]int64{
				QuantityPeriod: target + 3000, QuantityJitter: 3000, QuantityWakeupLatency: 8000,
				QuantityJobDuration: 100_000, QuantityCPULoad: 100_000, QuantityFrameRTT: 20_000,
			},
			counts: map[Counter]int64{
				CounterCycles: 1, CounterOverruns: 1, CounterAcyclicCycles: 1, CounterAcyclicOverruns: 1, CounterYieldLate: 1,
			},
		},
		{
			name:   "acyclic cycle in time",
			change: func(s *shm.Sample) { s.Flags |= shm.SampleAcyclic },
			want: map[Quantity]int64{
				QuantityPeriod: target + 3000, QuantityJitter: 3000, QuantityWakeupLatency: 8000,
				QuantityJobDuration: 100_000, QuantityCPULoad: 100_000, QuantityFrameRTT: 20_000,
			},
			counts: map[Counter]int64{CounterCycles: 1, CounterAcyclicCycles: 1},
		},
		{
			name: "DC difference and controller error, as absolute values",
			change: func(s *shm.Sample) {
				s.Flags |= shm.SampleDCValid | shm.SampleCtlValid
				s.DCDiff, s.CtlErr = -150, math.MinInt32
			},
			want: map[Quantity]int64{
				QuantityPeriod: target + 3000, QuantityJitter: 3000, QuantityWakeupLatency: 8000,
				QuantityJobDuration: 100_000, QuantityCPULoad: 100_000, QuantityFrameRTT: 20_000,
				QuantityDCTimeDifference: 150, QuantityDCControllerError: -math.MinInt32,
			},
			counts: map[Counter]int64{CounterCycles: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := NewDeriver(testTarget)
			first := cycleSample(0, 5000, 20_000, 100_000)
			d.Derive(&first)
			cycle := uint64(1)
			if tt.gap {
				cycle = 3
			}
			s := cycleSample(cycle, 8000, 20_000, 100_000)
			if tt.change != nil {
				tt.change(&s)
			}
			f := d.Derive(&s)
			for q := range NumQuantities {
				raw, ok := f.Raw(q)
				want, measured := tt.want[q]
				if ok != measured || raw != want {
					t.Errorf("%s: %d (measured %v), want %d (measured %v)", q, raw, ok, want, measured)
				}
				v, vok := f.Value(q)
				wantV := float64(want) / 1e9
				if q == QuantityCPULoad {
					wantV = float64(want) / target
				}
				if vok != measured || (measured && v != wantV) {
					t.Errorf("%s: value %g (measured %v), want %g", q, v, vok, wantV)
				}
			}
			for c := range NumCounters {
				if got := f.Count(c); got != tt.counts[c] {
					t.Errorf("%s: count %d, want %d", c, got, tt.counts[c])
				}
			}
		})
	}
}

// TestDeriverState checks what the deriver carries from sample to sample:
// the expected working counter, the ring drops across rings, and Restart.
func TestDeriverState(t *testing.T) {
	d := NewDeriver(testTarget)
	if _, ok := d.ExpectedWKC(); ok {
		t.Error("ExpectedWKC known before the first sample")
	}
	s := cycleSample(0, 5000, 20_000, 100_000)
	s.ExpectedWKC = 7
	d.Derive(&s)
	if wkc, ok := d.ExpectedWKC(); !ok || wkc != 7 {
		t.Errorf("ExpectedWKC = %d, %v; want 7, true", wkc, ok)
	}
	d.Restart()
	s = cycleSample(1, 5000, 20_000, 100_000)
	if f := d.Derive(&s); f.measured&(1<<QuantityPeriod) != 0 {
		t.Error("a period measured across Restart")
	}
	for _, step := range []struct {
		restart   bool
		set, want uint64
	}{{false, 4, 4}, {false, 9, 9}, {true, 1, 10}} {
		if step.restart {
			d.Restart()
		}
		var totals SegmentCounts
		totals[CounterRingDrops] = step.set
		d.SetSegment(totals)
		if got := d.SegmentCount(CounterRingDrops); got != step.want {
			t.Errorf("after SetSegment(ring drops %d): %d, want %d", step.set, got, step.want)
		}
	}
}

// TestReportValues checks the statistics both renderers export:
// seconds for durations, the job duration over the target for the CPU
// load, none for an empty window.
func TestReportValues(t *testing.T) {
	job := stats.Summary{Count: 4, Min: 100_000, Max: 400_000, Mean: 250_000, StdDev: 50_000,
		P50: 200_000, P90: 300_000, P99: 400_000, P999: 400_000}
	r := Report{Target: 1_000_000}
	r.Windows[QuantityJobDuration], r.Windows[QuantityWakeupLatency] = job, job
	tests := []struct {
		q    Quantity
		want []float64
	}{
		{QuantityJobDuration, []float64{100e-6, 400e-6, 250e-6, 50e-6, 200e-6, 300e-6, 400e-6, 400e-6}},
		{QuantityWakeupLatency, []float64{100e-6, 400e-6, 250e-6, 50e-6, 200e-6, 300e-6, 400e-6, 400e-6}},
		{QuantityCPULoad, []float64{0.1, 0.4, 0.25, 0.05, 0.2, 0.3, 0.4, 0.4}},
		{QuantityFrameRTT, nil},
		{NumQuantities, nil},
	}
	for _, tt := range tests {
		got, ok := r.Values(tt.q)
		if ok != (tt.want != nil) {
			t.Errorf("%d: ok %v, want %v", tt.q, ok, tt.want != nil)
			continue
		}
		for i, w := range tt.want {
			if !closeTo(got[i], w) {
				t.Errorf("%s %s = %g, want %g", tt.q, Stat(i), got[i], w)
			}
		}
	}
	if r.Summary(QuantityCPULoad) != job || r.Summary(NumQuantities) != (stats.Summary{}) {
		t.Errorf("Summary: CPU load %+v (want the job's), out of range %+v", r.Summary(QuantityCPULoad), r.Summary(NumQuantities))
	}
	if QuantityCPULoad.String() != "cycle_cpu_load" || CounterLateAnswers.String() != "late_answers" {
		t.Errorf("names %q, %q", QuantityCPULoad, CounterLateAnswers)
	}
}

// TestDeriveAllocs proves that Derive allocates nothing.
func TestDeriveAllocs(t *testing.T) {
	d := NewDeriver(testTarget)
	next := sampleStream()
	if n := testing.AllocsPerRun(10_000, func() { d.Derive(next()) }); n != 0 {
		t.Errorf("Derive: %v allocs per sample, want 0", n)
	}
}

// BenchmarkDerive measures the cost of a sample's figures alone.
func BenchmarkDerive(b *testing.B) {
	d := NewDeriver(testTarget)
	next := sampleStream()
	b.ReportAllocs()
	for b.Loop() {
		d.Derive(next())
	}
}

// TestWindowCapacity checks the window sizing.
func TestWindowCapacity(t *testing.T) {
	tests := []struct {
		window, period time.Duration
		want           int
	}{
		{10 * time.Second, time.Millisecond, 11_016},
		{10 * time.Second, 250 * time.Microsecond, 44_016},
		{time.Hour, 50 * time.Microsecond, MaxWindowCapacity},
		{0, time.Millisecond, 1},
	}
	for _, tt := range tests {
		if got := WindowCapacity(tt.window, tt.period); got != tt.want {
			t.Errorf("WindowCapacity(%v, %v) = %d, want %d", tt.window, tt.period, got, tt.want)
		}
	}
}

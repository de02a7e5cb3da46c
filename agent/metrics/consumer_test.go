package metrics

import (
	"math"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/shm"
)

// observeLatencies feeds 1000 cycles whose wake-up latencies are 1…1000 µs
// in a scrambled order (job = 2 × latency, frame round trip = latency).
func observeLatencies(c *Consumer) {
	for i := range 1000 {
		us := int64((i*617)%1000 + 1) // 617 is coprime with 1000: a permutation of 1…1000
		s := cycleSample(uint64(i), us*1000, us*1000, 2*us*1000)
		c.Observe(&s)
	}
}

// TestHistogramBuckets checks the classic and native buckets of
// ecagent_wakeup_latency_seconds against 1000 latencies 1…1000 µs.
func TestHistogramBuckets(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	observeLatencies(r.Consumer())
	h := family(t, r, nameWakeupLatency).GetMetric()[0].GetHistogram()

	if h.GetSampleCount() != 1000 {
		t.Errorf("sample count %d, want 1000", h.GetSampleCount())
	}
	if want := 500500e-6; !closeTo(h.GetSampleSum(), want) {
		t.Errorf("sample sum %g, want %g", h.GetSampleSum(), want)
	}

	// Classic buckets are cumulative: latencies ≤ bound.
	wantClassic := []struct {
		le    float64
		count uint64
	}{
		{1e-6, 1}, {2e-6, 2}, {5e-6, 5},
		{10e-6, 10}, {20e-6, 20}, {50e-6, 50},
		{100e-6, 100}, {200e-6, 200}, {500e-6, 500},
		{1e-3, 1000}, {2e-3, 1000}, {5e-3, 1000}, {10e-3, 1000},
	}
	buckets := h.GetBucket()
	if len(buckets) != len(wantClassic) {
		t.Fatalf("%d classic buckets, want %d", len(buckets), len(wantClassic))
	}
	for i, w := range wantClassic {
		if b := buckets[i]; b.GetUpperBound() != w.le || b.GetCumulativeCount() != w.count {
			t.Errorf("bucket %d: le=%g count=%d, want le=%g count=%d", i, b.GetUpperBound(), b.GetCumulativeCount(), w.le, w.count)
		}
	}

	// Native buckets: schema 3 (factor 2^(1/8)); bucket k holds
	// 2^((k−1)/8) < v ≤ 2^(k/8). Compute the expected counts per bucket
	// independently and compare with the decoded spans.
	if h.GetSchema() != 3 {
		t.Fatalf("native schema %d, want 3", h.GetSchema())
	}
	if h.GetZeroCount() != 0 || len(h.GetNegativeSpan()) != 0 {
		t.Errorf("zero count %d, negative spans %v, want none", h.GetZeroCount(), h.GetNegativeSpan())
	}
	want := map[int]int64{}
	for us := 1; us <= 1000; us++ {
		v := float64(us) / 1e6
		k := int(math.Ceil(math.Log2(v) * 8))
		if !(math.Pow(2, float64(k-1)/8) < v && v <= math.Pow(2, float64(k)/8)) {
			t.Fatalf("test bug: %g not in bucket %d", v, k)
		}
		want[k]++
	}
	got := decodeNative(h.GetPositiveSpan(), h.GetPositiveDelta())
	var total int64
	for k, n := range got {
		total += n
		if n != want[k] {
			t.Errorf("native bucket %d: %d, want %d", k, n, want[k])
		}
	}
	for k, n := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("native bucket %d missing, want %d", k, n)
		}
	}
	if total != 1000 {
		t.Errorf("native buckets hold %d observations, want 1000", total)
	}
}

// decodeNative turns spans and delta-encoded counts into bucket index →
// count, leaving out empty buckets.
func decodeNative(spans []*dto.BucketSpan, deltas []int64) map[int]int64 {
	out := map[int]int64{}
	idx, pos := 0, 0
	var count int64
	for i, s := range spans {
		if i == 0 {
			idx = int(s.GetOffset())
		} else {
			idx += int(s.GetOffset())
		}
		for range s.GetLength() {
			count += deltas[pos]
			pos++
			if count != 0 {
				out[idx] = count
			}
			idx++
		}
	}
	return out
}

// TestPeriodBuckets checks the classic bounds of the period histogram.
func TestPeriodBuckets(t *testing.T) {
	b := periodBuckets(testTarget)
	for i := 1; i < len(b); i++ {
		if b[i] <= b[i-1] {
			t.Fatalf("bounds not ascending at %d: %v", i, b)
		}
	}
	has := func(v float64) bool {
		for _, x := range b {
			if closeTo(x, v) {
				return true
			}
		}
		return false
	}
	for _, v := range []float64{0.5e-3, 0.999e-3, 1e-3, 1.001e-3, 1.5e-3, 2e-3, 3e-3, 5e-3} {
		if !has(v) {
			t.Errorf("period bounds %v lack %g", b, v)
		}
	}
	if b[0] <= 0 {
		t.Errorf("first bound %g, want > 0", b[0])
	}
}

// TestWindowGauges checks the window gauges against known sequences.
func TestWindowGauges(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	c := r.Consumer()
	observeLatencies(c)
	rep := c.CloseWindow()

	// 1…1000 µs: nearest-rank p50 = 500, p90 = 900, p99 = 990, p99.9 = 999;
	// population stddev of 1…n is sqrt((n²−1)/12).
	sd := math.Sqrt((1000*1000-1)/12.0) * 1e-6
	wantLatency := map[string]float64{
		"min": 1e-6, "max": 1000e-6, "mean": 500.5e-6, "stddev": sd,
		"p50": 500e-6, "p90": 900e-6, "p99": 990e-6, "p999": 999e-6,
	}
	wantJob := map[string]float64{}
	wantLoad := map[string]float64{}
	for k, v := range wantLatency {
		wantJob[k] = 2 * v
		wantLoad[k] = 2 * v / testTarget.Seconds()
	}
	tests := []struct {
		name string
		want map[string]float64
	}{
		{nameWakeupWin, wantLatency},
		{nameFrameRTTWin, wantLatency},
		{nameJobWin, wantJob},
		{nameCPULoadWin, wantLoad},
	}
	for _, tt := range tests {
		mf := family(t, r, tt.name)
		if len(mf.GetMetric()) != len(WindowStats()) {
			t.Errorf("%s: %d series, want %d", tt.name, len(mf.GetMetric()), len(WindowStats()))
		}
		for _, stat := range WindowStats() {
			if got := gaugeByLabel(t, mf, labelStat, stat); !closeTo(got, tt.want[stat]) {
				t.Errorf("%s{stat=%q} = %g, want %g", tt.name, stat, got, tt.want[stat])
			}
		}
	}

	samples := family(t, r, nameWindowSamples)
	for q, want := range map[string]float64{
		"wakeup_latency": 1000, "job_duration": 1000, "cycle_cpu_load": 1000, "frame_rtt": 1000,
		"cycle_period": 999, "cycle_jitter": 999, "dc_time_difference": 0, "dc_controller_error": 0,
	} {
		if got := gaugeByLabel(t, samples, labelQuantity, q); got != want {
			t.Errorf("%s{quantity=%q} = %g, want %g", nameWindowSamples, q, got, want)
		}
	}
	// No DC difference measured: its window gauges are NaN.
	if got := gaugeByLabel(t, family(t, r, nameDCTimeDiffWin), labelStat, "max"); !math.IsNaN(got) {
		t.Errorf("DC window max = %g, want NaN for an empty window", got)
	}
	if rep.Counts[cyclestats.CounterCycles] != 1000 || rep.Windows[cyclestats.QuantityWakeupLatency].Max != 1_000_000 || rep.Windows[cyclestats.QuantityWakeupLatency].P999 != 999_000 {
		t.Errorf("report: cycles %d, latency max %d p99.9 %d; want 1000, 1000000, 999000",
			rep.Counts[cyclestats.CounterCycles], rep.Windows[cyclestats.QuantityWakeupLatency].Max, rep.Windows[cyclestats.QuantityWakeupLatency].P999)
	}

	// The next window starts empty.
	rep = c.CloseWindow()
	if rep.Counts[cyclestats.CounterCycles] != 0 || rep.Windows[cyclestats.QuantityWakeupLatency].Count != 0 {
		t.Errorf("second window: cycles %d, latencies %d, want 0", rep.Counts[cyclestats.CounterCycles], rep.Windows[cyclestats.QuantityWakeupLatency].Count)
	}
	if got := gaugeByLabel(t, family(t, r, nameWakeupWin), labelStat, "max"); !math.IsNaN(got) {
		t.Errorf("empty window: wake-up max = %g, want NaN", got)
	}
}

// TestPeriodAndJitter checks that periods are only taken between
// consecutive cycle numbers, and the signed and absolute jitter.
func TestPeriodAndJitter(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	c := r.Consumer()
	// Wake times (ns) per cycle; cycle 3 was dropped from the ring.
	wakes := []struct {
		cycle uint64
		wake  int64
	}{
		{0, 0},
		{1, 1_010_000}, // period 1.010 ms, jitter +10 µs
		{2, 1_990_000}, // period 0.980 ms, jitter −20 µs
		{4, 4_000_000}, // gap: no period
		{5, 5_005_000}, // period 1.005 ms, jitter +5 µs
	}
	for _, w := range wakes {
		s := shm.Sample{Cycle: w.cycle, Deadline: w.wake, Wake: w.wake, Send: w.wake, Recv: w.wake, End: w.wake + 1000}
		c.Observe(&s)
	}
	rep := c.CloseWindow()
	tests := []struct {
		name      string
		got, want int64
	}{
		{"period count", rep.Windows[cyclestats.QuantityPeriod].Count, 3},
		{"period min", rep.Windows[cyclestats.QuantityPeriod].Min, 980_000},
		{"period max", rep.Windows[cyclestats.QuantityPeriod].Max, 1_010_000},
		{"jitter min", rep.Windows[cyclestats.QuantityJitter].Min, 5_000},
		{"jitter max", rep.Windows[cyclestats.QuantityJitter].Max, 20_000},
		{"signed jitter min", rep.SignedJitter.Min, -20_000},
		{"signed jitter max", rep.SignedJitter.Max, 10_000},
		{"signed jitter p50", rep.SignedJitter.P50, 5_000},
		{"cycles", rep.Counts[cyclestats.CounterCycles], 5},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s = %d, want %d", tt.name, tt.got, tt.want)
		}
	}
	if got := gaugeByLabel(t, family(t, r, nameCycleJitterWin), labelStat, "max"); !closeTo(got, 20e-6) {
		t.Errorf("jitter window max %g s, want 20e-6", got)
	}
	if h := family(t, r, nameCyclePeriod).GetMetric()[0].GetHistogram(); h.GetSampleCount() != 3 {
		t.Errorf("period histogram count %d, want 3 (no period across the dropped sample)", h.GetSampleCount())
	}

	// After Restart the next sample starts a new run even if its cycle
	// number happens to follow.
	c.Restart()
	s := shm.Sample{Cycle: 6, Wake: 6_000_000, End: 6_001_000}
	c.Observe(&s)
	if rep := c.CloseWindow(); rep.Windows[cyclestats.QuantityPeriod].Count != 0 {
		t.Errorf("period after Restart: count %d, want 0", rep.Windows[cyclestats.QuantityPeriod].Count)
	}
}

// TestCounters checks the counters and per-window counts against sample
// flags.
func TestCounters(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	c := r.Consumer()
	samples := []struct {
		flags   shm.SampleFlags
		skipped uint16
		dcDiff  int32
	}{
		{0, 0, 0},
		{shm.SampleLostFrame | shm.SampleWKCMismatch, 0, 0},
		{shm.SampleOverrun, 0, 0},
		{shm.SampleSkipped, 3, 0},
		{shm.SampleDCValid, 0, -150},
		{shm.SampleDCValid | shm.SampleLostFrame, 0, 40},
		{shm.SampleLateAnswer, 0, 0},
		{shm.SampleAcyclic, 0, 0},
		{shm.SampleAcyclic | shm.SampleAcyclicFrame | shm.SampleOverrun, 0, 0},
		{shm.SampleYieldLate, 0, 0},
	}
	for i, sm := range samples {
		s := cycleSample(uint64(i), 5000, 20_000, 100_000)
		s.Flags, s.Skipped, s.DCDiff = sm.flags, sm.skipped, sm.dcDiff
		c.Observe(&s)
	}
	c.SetSegment(segment(cyclestats.CounterRingDrops, 7))
	counters := map[string]float64{
		nameCycles: 10, nameLostFrames: 2, nameWKCErrors: 1, nameOverruns: 2, nameSkipped: 3, nameRingDrops: 7,
		nameLateAnswers: 1, nameAcyclicCycles: 2, nameAcyclicOver: 1, nameYieldLate: 1,
	}
	for name, want := range counters {
		if got := family(t, r, name).GetMetric()[0].GetCounter().GetValue(); got != want {
			t.Errorf("%s = %g, want %g", name, got, want)
		}
	}
	if got := family(t, r, nameExpectedWKC).GetMetric()[0].GetGauge().GetValue(); got != 3 {
		t.Errorf("%s = %g, want 3", nameExpectedWKC, got)
	}
	if h := family(t, r, nameFrameRTT).GetMetric()[0].GetHistogram(); h.GetSampleCount() != 8 {
		t.Errorf("frame RTT observations %d, want 8 (lost frames left out)", h.GetSampleCount())
	}
	dc := family(t, r, nameDCTimeDiff).GetMetric()[0].GetHistogram()
	if dc.GetSampleCount() != 2 || !closeTo(dc.GetSampleSum(), 190e-9) {
		t.Errorf("DC histogram count %d sum %g, want 2 and 190e-9 (absolute values)", dc.GetSampleCount(), dc.GetSampleSum())
	}

	rep := c.CloseWindow()
	if rep.Counts[cyclestats.CounterLostFrames] != 2 || rep.Counts[cyclestats.CounterWKCErrors] != 1 || rep.Counts[cyclestats.CounterOverruns] != 2 || rep.Counts[cyclestats.CounterSkipped] != 3 || rep.Windows[cyclestats.QuantityDCTimeDifference].Max != 150 {
		t.Errorf("report %+v: want 2 lost, 1 WKC error, 2 overruns, 3 skipped, DC max 150", rep)
	}
	if rep.Counts[cyclestats.CounterLateAnswers] != 1 || rep.Counts[cyclestats.CounterAcyclicCycles] != 2 || rep.Counts[cyclestats.CounterAcyclicOverruns] != 1 || rep.Counts[cyclestats.CounterYieldLate] != 1 {
		t.Errorf("report: %d late answers, %d acyclic cycles, %d acyclic overruns, %d yield-late; want 1, 2, 1, 1",
			rep.Counts[cyclestats.CounterLateAnswers], rep.Counts[cyclestats.CounterAcyclicCycles], rep.Counts[cyclestats.CounterAcyclicOverruns], rep.Counts[cyclestats.CounterYieldLate])
	}
	if rep = c.CloseWindow(); rep.Counts[cyclestats.CounterLateAnswers] != 0 || rep.Counts[cyclestats.CounterAcyclicCycles] != 0 || rep.Counts[cyclestats.CounterAcyclicOverruns] != 0 || rep.Counts[cyclestats.CounterYieldLate] != 0 {
		t.Errorf("next window: %+v, want the counts back at 0", rep)
	}
}

// TestDCControllerError checks the controller error histogram, window
// gauges and report against known values: only samples with
// SampleCtlValid count, as absolute values.
func TestDCControllerError(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	c := r.Consumer()
	samples := []struct {
		flags  shm.SampleFlags
		ctlErr int32
	}{
		{shm.SampleCtlValid, 40},
		{shm.SampleCtlValid, -250},
		{0, 99_999}, // not measured: left out
		{shm.SampleCtlValid | shm.SampleDCValid, 1_500},
		{shm.SampleCtlValid, -7},
		{shm.SampleCtlValid, 0},
	}
	for i, sm := range samples {
		s := cycleSample(uint64(i), 5000, 20_000, 100_000)
		s.Flags, s.CtlErr = sm.flags, sm.ctlErr
		c.Observe(&s)
	}
	h := family(t, r, nameDCCtlErr).GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 5 || !closeTo(h.GetSampleSum(), 1797e-9) {
		t.Errorf("histogram count %d sum %g, want 5 and 1797e-9", h.GetSampleCount(), h.GetSampleSum())
	}
	// Values 0, 7, 40, 250, 1500 ns against the DC buckets.
	wantClassic := map[float64]uint64{
		10e-9: 2, 20e-9: 2, 50e-9: 3, 100e-9: 3, 200e-9: 3, 500e-9: 4,
		1e-6: 4, 2e-6: 5, 5e-6: 5, 1e-3: 5,
	}
	if n := len(h.GetBucket()); n != len(dcBuckets()) {
		t.Errorf("%d classic buckets, want %d", n, len(dcBuckets()))
	}
	for _, b := range h.GetBucket() {
		if want, ok := wantClassic[b.GetUpperBound()]; ok && b.GetCumulativeCount() != want {
			t.Errorf("bucket le=%g: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if h.GetZeroCount() != 1 {
		t.Errorf("native zero bucket %d, want 1 (the 0 ns error)", h.GetZeroCount())
	}

	rep := c.CloseWindow()
	// 40, 250, 1500, 7, 0 in that order; population stddev about 577.6.
	want := stats.Summary{Count: 5, Sampled: 5, Min: 0, Max: 1500, MinAt: 4, MaxAt: 2,
		P50: 40, P90: 1500, P99: 1500, P999: 1500, P9999: 1500}
	got := rep.Windows[cyclestats.QuantityDCControllerError]
	if !closeTo(got.Mean, 359.4) || !closeTo(got.StdDev, math.Sqrt(333661.44)) {
		t.Errorf("report DCControllerError mean %g stddev %g, want 359.4 and %g", got.Mean, got.StdDev, math.Sqrt(333661.44))
	}
	got.Mean, got.StdDev = 0, 0
	if got != want {
		t.Errorf("report DCControllerError %+v, want %+v", got, want)
	}
	if rep.Windows[cyclestats.QuantityDCTimeDifference].Count != 1 {
		t.Errorf("DC time difference count %d, want 1 (only one sample had SampleDCValid)", rep.Windows[cyclestats.QuantityDCTimeDifference].Count)
	}
	win := family(t, r, nameDCCtlErrWin)
	for stat, v := range map[string]float64{"min": 0, "max": 1500e-9, "mean": 359.4e-9, "p50": 40e-9, "p99": 1500e-9} {
		if g := gaugeByLabel(t, win, labelStat, stat); !closeTo(g, v) {
			t.Errorf("%s{stat=%q} = %g, want %g", nameDCCtlErrWin, stat, g, v)
		}
	}
	if g := gaugeByLabel(t, family(t, r, nameWindowSamples), labelQuantity, "dc_controller_error"); g != 5 {
		t.Errorf("window samples of dc_controller_error %g, want 5", g)
	}
}

// TestObserveAllocs proves that Observe and CloseWindow allocate nothing.
func TestObserveAllocs(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	c := r.Consumer()
	next := sampleStream()
	// Warm up: the native histograms create their buckets on first use.
	for range 4096 {
		c.Observe(next())
	}
	if n := testing.AllocsPerRun(10_000, func() { c.Observe(next()) }); n != 0 {
		t.Errorf("Observe: %v allocs per sample, want 0", n)
	}
	if n := testing.AllocsPerRun(10, func() { c.CloseWindow() }); n != 0 {
		t.Errorf("CloseWindow: %v allocs, want 0", n)
	}
}

// BenchmarkObserve measures the consumer's cost per sample.
func BenchmarkObserve(b *testing.B) {
	r := newTestRegistry(b, testOptions())
	c := r.Consumer()
	next := sampleStream()
	for range 4096 {
		c.Observe(next())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		c.Observe(next())
		if i%40_000 == 39_999 { // keep the windows at their real size
			b.StopTimer()
			c.CloseWindow()
			b.StartTimer()
		}
	}
}

// BenchmarkCloseWindow measures closing a full 10 s window at 1 kHz.
func BenchmarkCloseWindow(b *testing.B) {
	r := newTestRegistry(b, testOptions())
	c := r.Consumer()
	next := sampleStream()
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for range 10_000 {
			c.Observe(next())
		}
		b.StartTimer()
		c.CloseWindow()
	}
}

// TestConcurrentGather scrapes while the consumer observes and closes
// windows (run with -race).
func TestConcurrentGather(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	c := r.Consumer()
	next := sampleStream()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 20_000 {
			c.Observe(next())
			if i%5000 == 4999 {
				c.CloseWindow()
				c.SetSegment(segment(cyclestats.CounterRingDrops, uint64(i)))
			}
		}
	}()
	for {
		if _, err := r.Gatherer().Gather(); err != nil {
			t.Fatalf("Gather: %v", err)
		}
		select {
		case <-done:
			if got := family(t, r, nameCycles).GetMetric()[0].GetCounter().GetValue(); got != 20_000 {
				t.Errorf("cycles %g, want 20000", got)
			}
			return
		default:
		}
	}
}

package bench

import (
	"errors"
	"testing"
	"time"

	"github.com/ecagent/ecagent/shm"
)

const (
	us1    = int64(time.Microsecond)
	target = time.Millisecond
	t0     = int64(1_000_000_000_000) // an arbitrary CLOCK_MONOTONIC origin
)

// cycleSpec describes one synthetic cycle; times in µs relative to its
// deadline, which lies on the target grid unless deadline is set.
type cycleSpec struct {
	cycle    uint64 // cycle number
	lat      int64  // wake − deadline, µs
	job      int64  // end − wake, µs
	rtt      int64  // recv − send, µs
	wkc      uint16
	flags    shm.SampleFlags
	skipped  uint16
	deadline int64 // absolute ns; 0: t0 + cycle·target
}

func sample(c cycleSpec) shm.Sample {
	dl := c.deadline
	if dl == 0 {
		dl = t0 + int64(c.cycle)*int64(target)
	}
	wake := dl + c.lat*us1
	send := wake + us1
	return shm.Sample{
		Cycle: c.cycle, Deadline: dl, Wake: wake, Send: send, Recv: send + c.rtt*us1,
		End: wake + c.job*us1, WKC: c.wkc, ExpectedWKC: 8, Flags: c.flags, Skipped: c.skipped,
	}
}

// simple returns cycles 0..n-1 with the given latencies, job 100 µs,
// round trip 50 µs, WKC 8.
func simple(lats ...int64) []cycleSpec {
	var cs []cycleSpec
	for i, l := range lats {
		cs = append(cs, cycleSpec{cycle: uint64(i), lat: l, job: 100, rtt: 50, wkc: 8})
	}
	return cs
}

func record(t *testing.T, cs []cycleSpec, histMicros int) *Report {
	t.Helper()
	rec, err := NewRecorder(target, uint64(len(cs)), histMicros)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		s := sample(c)
		rec.Observe(&s)
	}
	rep, err := rec.Report(RunInfo{Requested: uint64(len(cs))})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestRecorderTimings(t *testing.T) {
	// Latencies 10, 30, 20, 50, 40 µs on a 1 ms grid: periods 1020, 990,
	// 1030, 990 µs.
	rep := record(t, simple(10, 30, 20, 50, 40), 100)
	ms := int64(target)
	checks := []struct {
		name      string
		got, want int64
	}{
		{"cycles", int64(rep.Cycles), 5},
		{"periods", rep.CycleTime.Count, 4},
		{"cycle min", rep.CycleTime.Min, ms - 10*us1},
		{"cycle max", rep.CycleTime.Max, ms + 30*us1},
		{"cycle p50", rep.CycleTime.P50, ms - 10*us1},
		{"cycle p99", rep.CycleTime.P99, ms + 30*us1},
		{"jitter min", rep.Jitter.Min, -10 * us1},
		{"jitter max", rep.Jitter.Max, 30 * us1},
		{"jitter |max|", rep.Jitter.AbsMax, 30 * us1},
		{"jitter |p99|", rep.Jitter.AbsP99, 30 * us1},
		// |jitter| = 20, 10, 30, 10: 95 % of 4 is rank 4 → 30 µs.
		{"interval half width", rep.Jitter.Interval.HalfWidth, 30 * us1},
		{"interval lower", rep.Jitter.Interval.Lower, ms - 30*us1},
		{"interval count", int64(rep.Jitter.Interval.Count), 4},
		{"wake min", rep.WakeupLatency.Min, 10 * us1},
		{"wake max", rep.WakeupLatency.Max, 50 * us1},
		{"wake p50", rep.WakeupLatency.P50, 30 * us1},
		{"job max", rep.JobTime.Max, 100 * us1},
		{"rtt count", rep.FrameRTT.Count, 5},
		{"rtt max", rep.FrameRTT.Max, 50 * us1},
		{"duration", int64(rep.Duration), 4*ms + 40*us1 + 100*us1 - 10*us1},
		{"restarts", int64(rep.ScheduleRestarts), 0},
		{"missing", int64(rep.MissingCycles), 0},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if rep.CycleTime.Avg != float64(ms+7500) || rep.WakeupLatency.Avg != float64(30*us1) {
		t.Errorf("cycle avg %v, wake avg %v; want %v, %v", rep.CycleTime.Avg, rep.WakeupLatency.Avg, ms+7500, 30*us1)
	}
	if rep.CPULoadAvg != 10 || rep.CPULoadMax != 10 {
		t.Errorf("CPU load avg %v max %v, want 10, 10 (100 µs of 1 ms)", rep.CPULoadAvg, rep.CPULoadMax)
	}
	if rep.WakeupWholeMicrosAvg != 30 {
		t.Errorf("truncated wake avg %v, want 30", rep.WakeupWholeMicrosAvg)
	}
	// Jitter -10, -10, +20, +30 µs; median |jitter| 10 µs: bins ±10 µs,
	// [+10, +20), [+20, +50) µs.
	wantBins := []int{2, 0, 2}
	if len(rep.Jitter.Bins) != len(wantBins) {
		t.Fatalf("bins %+v, want %d", rep.Jitter.Bins, len(wantBins))
	}
	for i, b := range rep.Jitter.Bins {
		if b.Count != wantBins[i] {
			t.Errorf("bin %d [%v, %v] holds %d, want %d", i, b.Lower, b.Upper, b.Count, wantBins[i])
		}
	}
	if b := rep.Jitter.Bins[0]; b.Lower != float64(ms-10*us1) || b.Upper != float64(ms+10*us1) || b.Percent != 50 {
		t.Errorf("first bin %+v", b)
	}
	h := rep.WakeupHistogram
	for _, k := range []int{10, 20, 30, 40, 50} {
		if h.Bins[k] != 1 {
			t.Errorf("histogram bin %d µs = %d, want 1", k, h.Bins[k])
		}
	}
	if h.Total() != 5 || h.Overflow != 0 {
		t.Errorf("histogram total %d overflow %d", h.Total(), h.Overflow)
	}
}

func TestRecorderFaults(t *testing.T) {
	cases := []struct {
		name   string
		cycles []cycleSpec
		check  func(t *testing.T, r *Report)
	}{
		{"lost frame is not a WKC error and has no round trip", []cycleSpec{
			{cycle: 0, lat: 5, job: 10, rtt: 5, wkc: 8},
			{cycle: 1, lat: 5, job: 10, wkc: 0, flags: shm.SampleLostFrame | shm.SampleWKCMismatch},
			{cycle: 2, lat: 5, job: 10, rtt: 7, wkc: 4, flags: shm.SampleWKCMismatch},
		}, func(t *testing.T, r *Report) {
			if r.LostFrames != 1 || r.WKCErrors != 1 || r.FrameRTT.Count != 2 || r.FrameRTT.Max != 7*us1 {
				t.Errorf("lost %d, WKC errors %d, rtt count %d max %d", r.LostFrames, r.WKCErrors, r.FrameRTT.Count, r.FrameRTT.Max)
			}
			if r.WKCMin != 0 || r.WKCMax != 8 || r.ExpectedWKC != 8 {
				t.Errorf("WKC %d..%d expected %d", r.WKCMin, r.WKCMax, r.ExpectedWKC)
			}
		}},
		{"overrun with skipped deadlines is one long period", []cycleSpec{
			{cycle: 0, lat: 5, job: 10, wkc: 8},
			{cycle: 1, lat: 5, job: 2500, wkc: 8, flags: shm.SampleOverrun},
			{cycle: 2, lat: 5, job: 10, wkc: 8, skipped: 2, flags: shm.SampleSkipped, deadline: t0 + 4*int64(target)},
		}, func(t *testing.T, r *Report) {
			if r.Overruns != 1 || r.SkippedDeadlines != 2 || r.CycleTime.Count != 2 || r.CycleTime.Max != 3*int64(target) {
				t.Errorf("overruns %d, skipped %d, periods %d, longest %d", r.Overruns, r.SkippedDeadlines, r.CycleTime.Count, r.CycleTime.Max)
			}
			if r.CPULoadMax != 250 {
				t.Errorf("CPU load max %v, want 250 %%", r.CPULoadMax)
			}
		}},
		{"a sample missing from the ring is no period", []cycleSpec{
			{cycle: 0, lat: 5, wkc: 8}, {cycle: 1, lat: 5, wkc: 8}, {cycle: 4, lat: 5, wkc: 8}, {cycle: 5, lat: 5, wkc: 8},
		}, func(t *testing.T, r *Report) {
			if r.MissingCycles != 2 || r.CycleTime.Count != 2 || r.CycleTime.Max != int64(target) {
				t.Errorf("missing %d, periods %d, longest %d", r.MissingCycles, r.CycleTime.Count, r.CycleTime.Max)
			}
		}},
		{"a schedule restart is no period", []cycleSpec{
			{cycle: 0, lat: 5, wkc: 8},
			{cycle: 1, lat: 5, wkc: 8, deadline: t0 + int64(target) + 123*us1},
			{cycle: 2, lat: 5, wkc: 8, deadline: t0 + 2*int64(target) + 123*us1},
		}, func(t *testing.T, r *Report) {
			if r.ScheduleRestarts != 1 || r.CycleTime.Count != 1 || r.CycleTime.Max != int64(target) {
				t.Errorf("restarts %d, periods %d, longest %d", r.ScheduleRestarts, r.CycleTime.Count, r.CycleTime.Max)
			}
		}},
		{"an early wake-up counts at 0 µs", []cycleSpec{
			{cycle: 0, lat: 5, wkc: 8}, {cycle: 1, lat: -3, wkc: 8}, {cycle: 2, lat: 2000, wkc: 8},
		}, func(t *testing.T, r *Report) {
			h := r.WakeupHistogram
			if r.EarlyWakeups != 1 || r.WakeupLatency.Min != -3*us1 || h.Bins[0] != 1 || h.Underflow != 0 {
				t.Errorf("early %d, min %d, bin 0 %d, underflow %d", r.EarlyWakeups, r.WakeupLatency.Min, h.Bins[0], h.Underflow)
			}
			if h.Overflow != 1 || r.WakeupLatency.Max != 2000*us1 {
				t.Errorf("2 ms latency: overflow %d, max %d", h.Overflow, r.WakeupLatency.Max)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.check(t, record(t, c.cycles, 1000)) })
	}
}

func TestRecorderNeedsAPeriod(t *testing.T) {
	for _, n := range []int{0, 1} {
		rec, err := NewRecorder(target, 10, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range simple(make([]int64, n)...) {
			s := sample(c)
			rec.Observe(&s)
		}
		if _, err := rec.Report(RunInfo{}); !errors.Is(err, ErrNoCycles) {
			t.Errorf("%d samples: err %v, want ErrNoCycles", n, err)
		}
	}
	if _, err := NewRecorder(0, 10, 10); err == nil {
		t.Error("a zero target period is accepted")
	}
	if _, err := NewRecorder(target, 10, 0); err == nil {
		t.Error("an empty histogram is accepted")
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	rec, err := NewRecorder(target, 1000, 1000)
	if err != nil {
		t.Fatal(err)
	}
	s := sample(cycleSpec{lat: 12, job: 30, rtt: 20, wkc: 8})
	allocs := testing.AllocsPerRun(1000, func() {
		rec.Observe(&s)
		s.Cycle++
		s.Deadline += int64(target)
		s.Wake += int64(target)
		s.End += int64(target)
	})
	if allocs != 0 {
		t.Errorf("Observe allocates %v times per sample", allocs)
	}
}

func BenchmarkObserve(b *testing.B) {
	rec, err := NewRecorder(target, uint64(b.N)+1, 1000)
	if err != nil {
		b.Fatal(err)
	}
	s := sample(cycleSpec{lat: 12, job: 30, rtt: 20, wkc: 8})
	b.ReportAllocs()
	for b.Loop() {
		rec.Observe(&s)
		s.Cycle++
		s.Deadline += int64(target)
		s.Wake += int64(target) + int64(s.Cycle%7)*us1
		s.End += int64(target)
	}
}

package cyclestats

import (
	"testing"
	"time"

	"github.com/ecagent/ecagent/shm"
)

// TestReadSegment reads the totals a cycle left on a segment's heartbeat
// line and ring: each segment counter gets its own, the counters the
// samples advance none.
func TestReadSegment(t *testing.T) {
	seg, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	hb := seg.Heartbeat()
	hb.CountFrames(1000, 7)
	hb.CountLate(3)
	hb.CountLink(1100, 2)
	got := ReadSegment(seg.Samples(), hb)
	var want SegmentCounts
	want[CounterFramesSent], want[CounterFramesLost], want[CounterFramesLate] = 1000, 7, 3
	want[CounterLinkReceived], want[CounterLinkDrops] = 1100, 2
	if got != want {
		t.Errorf("ReadSegment = %v, want %v", got, want)
	}
	for c := range NumCounters {
		if !c.Segment() && got[c] != 0 {
			t.Errorf("%s, which the samples advance, read as %d", c, got[c])
		}
	}
}

// TestWindowsReport checks a window's report: the counts of the samples
// observed and of the segment since the window opened, the statistics of
// each quantity, the CPU load as the job over the target, and a fresh
// window after Close.
func TestWindowsReport(t *testing.T) {
	w, err := NewWindows(testTarget, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var seg SegmentCounts
	seg[CounterFramesSent] = 100
	w.SetSegment(seg)
	w.Close()
	for i := range uint64(4) {
		s := cycleSample(i, 2000, 15_000, 100_000*int64(i+1))
		if i == 2 {
			s.Flags |= shm.SampleLostFrame
		}
		if f := w.Observe(&s); f.Count(CounterCycles) != 1 {
			t.Fatalf("sample %d: figures count %d cycles", i, f.Count(CounterCycles))
		}
	}
	seg[CounterFramesSent] = 108
	w.SetSegment(seg)
	r := w.Close()
	if r.Counts[CounterCycles] != 4 || r.Counts[CounterLostFrames] != 1 || r.Counts[CounterFramesSent] != 8 {
		t.Errorf("counts %v: want 4 cycles, 1 lost, 8 frames sent", r.Counts)
	}
	if job := r.Summary(QuantityJobDuration); job.Count != 4 || job.Max != 400_000 || r.Summary(QuantityFrameRTT).Count != 3 {
		t.Errorf("job %+v, frame round trips %d", job, r.Summary(QuantityFrameRTT).Count)
	}
	if v, ok := r.Values(QuantityCPULoad); !ok || v[StatMax] != 0.4 || v[StatMin] != 0.1 {
		t.Errorf("CPU load %v, %v: want max 0.4, min 0.1", v, ok)
	}
	if p := r.Summary(QuantityPeriod); p.Count != 3 || r.SignedJitter.Max != p.Max-r.Target {
		t.Errorf("period %+v, signed jitter %+v", p, r.SignedJitter)
	}
	if r = w.Close(); r.Counts != ([NumCounters]int64{}) || r.Summary(QuantityJobDuration).Count != 0 {
		t.Errorf("the next window starts with %v, %d jobs", r.Counts, r.Summary(QuantityJobDuration).Count)
	}
}

// TestWindowsAllocs proves that Observe and Close allocate nothing.
func TestWindowsAllocs(t *testing.T) {
	w, err := NewWindows(testTarget, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	next := sampleStream()
	if n := testing.AllocsPerRun(10_000, func() { w.Observe(next()) }); n != 0 {
		t.Errorf("Observe: %v allocs per sample, want 0", n)
	}
	if n := testing.AllocsPerRun(10, func() { w.Close() }); n != 0 {
		t.Errorf("Close: %v allocs, want 0", n)
	}
}

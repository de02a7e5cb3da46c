package bench

import (
	"fmt"
	"slices"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/shm"
)

// MaxExactValues bounds the values a Recorder keeps per quantity for exact
// percentiles (16 MiB each). A longer bench (more than about 8.7 minutes at
// 250 µs) computes its percentiles from a uniform random sample of this many
// cycles, and the report says so; minimum, maximum, mean and standard
// deviation stay exact, and so do the wake-up latency percentiles at 1 µs
// resolution, which come from the histogram.
const MaxExactValues = 1 << 21

// Recorder turns the cycle samples of one bench run into the figures of a
// Report. It keeps every value it needs up to MaxExactValues per quantity,
// allocated by NewRecorder; Observe does not allocate. A Recorder is not
// safe for concurrent use.
type Recorder struct {
	target  int64 // ns
	deriver *cyclestats.Deriver

	period, wake, job, rtt *stats.Window
	wakeHist               *stats.LinearHistogram // 1 µs bins of wake-up latency

	samples        uint64 // samples observed
	gaps           uint64 // cycle numbers missing between observed samples
	lost           uint64 // frames that did not come back
	wkcErrors      uint64 // frames that came back with an unexpected WKC
	overruns       uint64 // cycles whose job ended after the next deadline
	skipped        uint64 // deadlines skipped after overruns
	yieldLate      uint64 // cycles woken late by the cycle's yield (shm.SampleYieldLate)
	yieldLateMax   int64  // ns: the largest wake-up latency among them
	restarts       uint64 // breaks of the schedule (deadline not on the grid)
	negativeWakes  uint64 // wake-ups before the deadline (counted in bin 0)
	wakeWholeMicro uint64 // Σ ⌊wake-up latency / 1 µs⌋, for cyclictest's avg
	expectedWKC    uint16
	wkcMin, wkcMax uint16

	last     shm.Sample
	havePrev bool

	// Blocks (see StartBlock): the wake-up latency of the current block
	// alone, and the time measured in the blocks before it.
	blockHist       *stats.LinearHistogram
	blockMax        int64 // ns, ≥ 0
	blockSamples    uint64
	blockFirst      shm.Sample
	priorBlocksSpan int64 // ns: Σ (last end − first wake) of earlier blocks
	blocks          int
}

// NewRecorder returns a recorder for a run of about cycles cycles of the
// target period whose wake-up latency histogram has histogramMicros bins of
// 1 µs (latencies of histogramMicros µs or more count as overflow, as with
// cyclictest -h).
func NewRecorder(target time.Duration, cycles uint64, histogramMicros int) (*Recorder, error) {
	if target <= 0 {
		return nil, fmt.Errorf("bench: target period %v, want > 0", target)
	}
	if histogramMicros < 1 {
		return nil, fmt.Errorf("bench: histogram of %d µs, want ≥ 1", histogramMicros)
	}
	capacity := int(min(max(cycles, 1), MaxExactValues))
	r := &Recorder{target: int64(target), deriver: cyclestats.NewDeriver(target)}
	var err error
	for _, w := range []**stats.Window{&r.period, &r.wake, &r.job, &r.rtt} {
		if *w, err = stats.NewWindow(capacity); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	if r.wakeHist, err = stats.NewLinearHistogram(0, 1000, histogramMicros); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if r.blockHist, err = stats.NewLinearHistogram(0, 1000, histogramMicros); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return r, nil
}

// Observe records one cycle sample. It does not allocate.
//
// A period (and its jitter) is measured between two samples with
// consecutive cycle numbers whose deadlines lie on the same schedule
// (one target period apart, or more when deadlines were skipped after an
// overrun: that long period is real and stays in). A break of the
// schedule (the cycle process restarts it once, after its start-up
// bookkeeping) or a sample missing from the ring starts a new run of
// periods instead of counting as a long one.
func (r *Recorder) Observe(s *shm.Sample) {
	if r.samples == 0 {
		r.wkcMin, r.wkcMax = s.WKC, s.WKC
	}
	if r.blockSamples == 0 {
		r.blockFirst = *s
	}
	r.samples++
	r.blockSamples++
	if r.havePrev {
		prev := &r.last
		switch {
		case s.Cycle != prev.Cycle+1:
			if s.Cycle > prev.Cycle {
				r.gaps += s.Cycle - prev.Cycle - 1
			}
		case s.Deadline-prev.Deadline != r.target*(1+int64(s.Skipped)):
			r.restarts++
		default:
			r.period.Add(s.Wake - prev.Wake)
		}
	}
	r.last, r.havePrev = *s, true

	// The per-sample figures are the ones the metrics endpoint derives;
	// only the period follows the bench's own schedule rule above.
	f := r.deriver.Derive(s)
	lat, _ := f.Raw(cyclestats.QuantityWakeupLatency)
	r.wake.Add(lat)
	if lat < 0 {
		// A wake-up before the deadline means the sleep was cut short
		// (a signal not resumed after). Count it at 0 µs, so the
		// histogram stays cyclictest's shape; the report counts it.
		r.negativeWakes++
		lat = 0
	}
	r.wakeHist.Add(lat)
	r.blockHist.Add(lat)
	r.blockMax = max(r.blockMax, lat)
	r.wakeWholeMicro += uint64(lat / 1000)
	job, _ := f.Raw(cyclestats.QuantityJobDuration)
	r.job.Add(job)

	r.expectedWKC = s.ExpectedWKC
	r.wkcMin, r.wkcMax = min(r.wkcMin, s.WKC), max(r.wkcMax, s.WKC)
	r.lost += uint64(f.Count(cyclestats.CounterLostFrames))
	if rtt, ok := f.Raw(cyclestats.QuantityFrameRTT); ok {
		r.rtt.Add(rtt)
		// The counter of a lost frame is unknown: never a WKC error too.
		r.wkcErrors += uint64(f.Count(cyclestats.CounterWKCErrors))
	}
	r.overruns += uint64(f.Count(cyclestats.CounterOverruns))
	r.skipped += uint64(f.Count(cyclestats.CounterSkipped))
	if f.Count(cyclestats.CounterYieldLate) > 0 {
		r.yieldLate++
		r.yieldLateMax = max(r.yieldLateMax, lat)
	}
}

// Samples returns the number of samples observed so far.
func (r *Recorder) Samples() uint64 { return r.samples }

// StartBlock begins a new block of samples from a new cycle process: the
// samples after it are not paired with the ones before (no period, gap or
// schedule break across blocks), the run's duration adds up the blocks'
// own spans (the time between blocks is not the cycle's), and Block
// returns the wake-up latency of the samples since. A recorder used
// without StartBlock is one block.
func (r *Recorder) StartBlock() {
	if r.blockSamples > 0 {
		r.priorBlocksSpan += r.last.End - r.blockFirst.Wake
	}
	r.blocks++
	r.havePrev = false
	r.blockHist.Reset()
	r.blockMax, r.blockSamples = 0, 0
}

// Block returns the wake-up latency of the current block: a copy of its
// 1 µs histogram (early wake-ups at 0), its largest value and its count.
func (r *Recorder) Block() LatencyBlock {
	h := *r.blockHist
	h.Bins = slices.Clone(r.blockHist.Bins)
	return LatencyBlock{Side: SideEcagent, Cycles: int64(r.blockSamples), Max: r.blockMax, Histogram: &h}
}

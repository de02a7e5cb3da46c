package cyclestats

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/shm"
)

// Figures are what one cycle sample measured: a value for each quantity
// the sample measured and what it adds to each counter. Deriver.Derive
// makes them; the renderers (Prometheus, OpenTelemetry) only record them.
type Figures struct {
	target   int64                // ns, the divisor of QuantityCPULoad
	measured uint32               // bit q set when quantity q was measured
	raw      [NumQuantities]int64 // ns (QuantityCPULoad: the job duration)
	counts   [NumCounters]int64
}

// Raw returns the value of q in nanoseconds, the unit of q's window, and
// whether the sample measured q. For QuantityCPULoad it is the job
// duration: Value divides it by the target period.
func (f *Figures) Raw(q Quantity) (ns int64, ok bool) {
	if f.measured&(1<<q) == 0 {
		return 0, false
	}
	return f.raw[q], true
}

// Value returns the value of q in its base unit (seconds or a ratio) and
// whether the sample measured q.
func (f *Figures) Value(q Quantity) (v float64, ok bool) {
	ns, ok := f.Raw(q)
	if !ok {
		return 0, false
	}
	if q == QuantityCPULoad {
		return float64(ns) / float64(f.target), true
	}
	return seconds(ns), true
}

// Count returns what the sample adds to counter c (0 for the segment
// counters, which no sample carries).
func (f *Figures) Count(c Counter) int64 { return f.counts[c] }

// set records the value of a quantity.
func (f *Figures) set(q Quantity, ns int64) {
	f.raw[q] = ns
	f.measured |= 1 << q
}

// Deriver is the one place that turns the stream of cycle samples into
// figures: Derive for each sample, SetSegment for the totals the segment
// holds (ring drops, frames). It keeps what the stream carries from one
// sample to the next (the previous wake-up, the last expected working
// counter, the totals of earlier segments). Derive, Restart and SetSegment
// belong to the one goroutine that drains the sample ring; ExpectedWKC
// and SegmentCount may be
// read from any goroutine (a scrape, an export). Create it with
// NewDeriver.
type Deriver struct {
	target  int64 // ns
	tracker stats.JitterTracker

	expectedWKC atomic.Int32 // −1 before the first sample

	// flags are the counters' sample flags (CounterInfo.Flag), by counter.
	flags [NumCounters]shm.SampleFlags

	// The segment counters, from firstSegment on: the last running
	// totals seen, what earlier segments (before a reset) had counted,
	// and their sum, the counter's value.
	segLast, segBase [numSegment]uint64
	segTotal         [numSegment]atomic.Uint64
}

// NewDeriver returns a deriver for the target cycle period (> 0).
func NewDeriver(target time.Duration) *Deriver {
	d := &Deriver{target: target.Nanoseconds(), tracker: stats.NewJitterTracker(target.Nanoseconds())}
	d.expectedWKC.Store(-1)
	for c := range NumCounters {
		d.flags[c] = c.Info().Flag
	}
	return d
}

// Derive returns the figures of one cycle sample. It does not allocate.
//
// The period and jitter are measured only between samples with
// consecutive cycle numbers, so a sample dropped from the ring never shows
// up as a double period; the wake-up latency, job duration and CPU load
// (job duration / target period: the load the job puts on the cycle's
// budget, independent of how late the cycle woke) always; the frame round
// trip unless the frame was lost; the absolute DC difference and the
// absolute DC controller error when measured. The counters follow the
// sample's flags (CounterInfo.Flag), and the sample's expected working counter becomes
// ExpectedWKC.
func (d *Deriver) Derive(s *shm.Sample) Figures {
	f := Figures{target: d.target}
	for c, flag := range d.flags {
		if flag != 0 && s.Flags&flag != 0 {
			f.counts[c] = 1
		}
	}
	f.counts[CounterCycles] = 1
	f.counts[CounterSkipped] = int64(s.Skipped)
	if s.Flags.Has(shm.SampleAcyclic | shm.SampleOverrun) {
		f.counts[CounterAcyclicOverruns] = 1
	}
	if wkc := int32(s.ExpectedWKC); d.expectedWKC.Load() != wkc {
		d.expectedWKC.Store(wkc)
	}

	if period, jitter, ok := d.tracker.Observe(s.Cycle, s.Wake); ok {
		f.set(QuantityPeriod, period)
		f.set(QuantityJitter, absInt64(jitter))
	}
	f.set(QuantityWakeupLatency, s.Wake-s.Deadline)
	job := s.End - s.Wake
	f.set(QuantityJobDuration, job)
	f.set(QuantityCPULoad, job)
	if s.Flags&shm.SampleLostFrame == 0 {
		f.set(QuantityFrameRTT, s.Recv-s.Send)
	}
	if s.Flags&shm.SampleDCValid != 0 {
		f.set(QuantityDCTimeDifference, absInt64(int64(s.DCDiff)))
	}
	if s.Flags&shm.SampleCtlValid != 0 {
		f.set(QuantityDCControllerError, absInt64(int64(s.CtlErr)))
	}
	return f
}

// Restart forgets the previous sample, so the next one starts a new run of
// periods, and starts a new segment: the segment counters continue from
// where they are, and the next SetSegment takes the new segment's totals
// from 0. Call it when the agent attaches to a cycle process, new or
// found running (its cycle numbers start again; it has a segment of its
// own).
func (d *Deriver) Restart() {
	d.tracker.Reset()
	d.newSegment()
}

// newSegment carries the segment counters' last totals into their base:
// what the old segment counted stays counted.
func (d *Deriver) newSegment() {
	for i := range d.segLast {
		d.segBase[i] += d.segLast[i]
		d.segLast[i] = 0
	}
}

// Target returns the target cycle period in nanoseconds.
func (d *Deriver) Target() int64 { return d.target }

// ExpectedWKC returns the expected working counter of the last sample, and
// false before the first sample.
func (d *Deriver) ExpectedWKC() (wkc int32, ok bool) {
	v := d.expectedWKC.Load()
	return v, v >= 0
}

// SetSegment takes the running totals the segment holds, read at one
// drain. Each counter is what the segments before (Restart) counted plus
// this one's total, so none goes backwards across a new segment.
func (d *Deriver) SetSegment(s SegmentCounts) {
	for i, n := range s[firstSegment:] {
		d.segLast[i] = n
		d.segTotal[i].Store(d.segBase[i] + n)
	}
}

// SegmentCount returns the value of segment counter c, 0 for a counter
// the samples advance.
func (d *Deriver) SegmentCount(c Counter) uint64 {
	if c.Segment() {
		return d.segTotal[c-firstSegment].Load()
	}
	return 0
}

// seconds converts nanoseconds to seconds. Dividing (rather than
// multiplying by 1e-9) gives the correctly rounded result, so 5000 ns is
// exactly the bucket bound 5e-6.
func seconds(ns int64) float64 { return float64(ns) / 1e9 }

// absInt64 returns |v|, saturating at the largest int64.
func absInt64(v int64) int64 {
	if v < 0 {
		if v == math.MinInt64 {
			return math.MaxInt64
		}
		return -v
	}
	return v
}

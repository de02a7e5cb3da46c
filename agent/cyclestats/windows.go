package cyclestats

import (
	"fmt"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/shm"
)

// MaxWindowCapacity caps the values a window keeps per quantity (2 MiB
// each). It holds a 10 s window at 20 kHz (50 µs cycles); longer windows
// at high rates get percentiles from a uniform random sample
// (stats.Summary.Approximate), while min, max, mean and stddev stay
// exact.
const MaxWindowCapacity = 1 << 18

// WindowCapacity returns the number of values a window of the given length
// keeps per quantity at the given cycle period: every value of the window
// plus 10 % (a late Close), at most MaxWindowCapacity.
func WindowCapacity(window, period time.Duration) int {
	if period <= 0 || window <= 0 {
		return 1
	}
	n := window / period
	n += n/10 + 16
	return int(min(n, MaxWindowCapacity))
}

// Windows turns the stream of cycle samples into window reports: a
// Deriver computes each sample's figures, the Windows keep every value of
// the open window and what the counters grew by, and Close reports the
// window's exact statistics. It belongs to the one goroutine that drains
// the sample ring: no two of its methods may run at once. Create it with
// NewWindows.
type Windows struct {
	deriver *Deriver
	windows [NumWindowed]*stats.Window
	// counts are what the sample counters grew by in the open window.
	counts [firstSegment]int64
	// segment is the segment counters' totals when the last window
	// closed; skipSegment moves it to the totals of the next SetSegment
	// (Attached).
	segment     [numSegment]uint64
	skipSegment bool
}

// NewWindows returns the windows of a cycle of target period, closed
// every window (which sizes them so that their percentiles are exact:
// WindowCapacity). All the memory they need is allocated here.
func NewWindows(target, window time.Duration) (*Windows, error) {
	w := &Windows{deriver: NewDeriver(target)}
	capacity := WindowCapacity(window, target)
	for q := range w.windows {
		win, err := stats.NewWindow(capacity)
		if err != nil {
			return nil, fmt.Errorf("cyclestats: window for %s: %w", Quantity(q), err)
		}
		w.windows[q] = win
	}
	return w, nil
}

// Deriver returns the deriver of the windows' figures, whose expected
// working counter and segment counters may be read from any goroutine.
func (w *Windows) Deriver() *Deriver { return w.deriver }

// Observe derives the figures of one cycle sample (Deriver.Derive), adds
// them to the open window and returns them for the renderers to record.
// It does not allocate.
func (w *Windows) Observe(s *shm.Sample) Figures {
	f := w.deriver.Derive(s)
	for k, n := range f.counts[:firstSegment] {
		w.counts[k] += n
	}
	for q, win := range w.windows {
		if f.measured&(1<<q) != 0 {
			win.Add(f.raw[q])
		}
	}
	return f
}

// SetSegment takes the running totals the segment holds, read at one
// drain (Deriver.SetSegment).
func (w *Windows) SetSegment(s SegmentCounts) {
	w.deriver.SetSegment(s)
	if w.skipSegment {
		w.skipSegment = false
		for k := range w.segment {
			w.segment[k] = w.deriver.SegmentCount(firstSegment + Counter(k))
		}
	}
}

// Restart forgets the previous sample, so the next one starts a new run
// of periods, and starts a new segment (Deriver.Restart). Call it when
// the agent attaches to a cycle process.
func (w *Windows) Restart() { w.deriver.Restart() }

// Attached says, after Restart, that the cycle process was running before
// this agent attached to it: the frames and ring drops its segment counted
// until the next SetSegment go into the counters, but not into the next
// window, which holds those counted while this agent watched. (The samples
// the ring kept from before are counted as they are drained.)
func (w *Windows) Attached() { w.skipSegment = true }

// Close ends the open window, returns its report and opens the next
// window. It sorts the window's values (O(n log n), a few milliseconds
// for 40 000 values) and does not allocate.
func (w *Windows) Close() Report {
	r := Report{Target: w.deriver.Target()}
	copy(r.Counts[:], w.counts[:])
	for k := range w.segment {
		now := w.deriver.SegmentCount(firstSegment + Counter(k))
		r.Counts[firstSegment+Counter(k)] = int64(now - w.segment[k])
		w.segment[k] = now
	}
	for q, win := range w.windows {
		r.Windows[q] = win.Snapshot()
		win.Reset()
	}
	r.SignedJitter = shifted(r.Windows[QuantityPeriod], -r.Target)
	w.counts = [firstSegment]int64{}
	return r
}

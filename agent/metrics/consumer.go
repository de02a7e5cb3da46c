package metrics

import (
	"math"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/shm"
)

// Consumer turns the cycle samples drained from the shared-memory ring into
// Prometheus histograms, counters and exact window statistics: its
// cyclestats.Windows compute each sample's figures and each window's
// statistics, the Consumer records them. It is owned by the one goroutine
// that drains the ring: Observe, CloseWindow, Restart, Attached and
// SetSegment must not be called concurrently with each other. Prometheus
// may gather the registry at any time.
type Consumer struct {
	windows *cyclestats.Windows

	hist       [cyclestats.NumQuantities]prometheus.Histogram
	winGauges  [cyclestats.NumQuantities][cyclestats.NumStats]prometheus.Gauge
	winSamples [cyclestats.NumQuantities]prometheus.Gauge
	// counters are the counters the samples advance; the segment
	// counters' entries stay nil (their series read the deriver).
	counters [cyclestats.NumCounters]prometheus.Counter
}

// Observe records one cycle sample: its figures (see
// cyclestats.Deriver.Derive) go into the histograms, the windows and the
// counters. It does not allocate.
func (c *Consumer) Observe(s *shm.Sample) {
	f := c.windows.Observe(s)
	for k := range cyclestats.NumCounters {
		if n := f.Count(k); n > 0 {
			c.counters[k].Add(float64(n))
		}
	}
	for q := range cyclestats.NumQuantities {
		if v, ok := f.Value(q); ok {
			c.hist[q].Observe(v)
		}
	}
}

// CloseWindow ends the current window: it publishes the window gauges
// (NaN for a quantity without values), returns the window's report
// (cyclestats.Windows.Close) and starts the next window. The agent calls
// it every metrics.window. It does not allocate.
func (c *Consumer) CloseWindow() cyclestats.Report {
	r := c.windows.Close()
	for q := range cyclestats.NumQuantities {
		c.publish(q, &r)
	}
	return r
}

// publish sets a quantity's window gauges from the report.
func (c *Consumer) publish(q cyclestats.Quantity, r *cyclestats.Report) {
	s := r.Summary(q)
	c.winSamples[q].Set(float64(s.Count))
	values, ok := r.Values(q)
	for i, gauge := range c.winGauges[q] {
		if ok {
			gauge.Set(values[i])
		} else {
			gauge.Set(math.NaN())
		}
	}
}

// Restart forgets the previous sample, so the next one starts a new run of
// periods, and starts a new segment (cyclestats.Windows.Restart). Call it
// when the agent attaches to a cycle process.
func (c *Consumer) Restart() { c.windows.Restart() }

// SetSegment sets the segment counters from the running totals the
// segment holds, read at one drain (cyclestats.ReadSegment); they
// continue across a new segment.
func (c *Consumer) SetSegment(s cyclestats.SegmentCounts) { c.windows.SetSegment(s) }

// Attached says, after Restart, that the cycle process was running before
// this agent attached to it (cyclestats.Windows.Attached).
func (c *Consumer) Attached() { c.windows.Attached() }

// Target returns the target cycle period in nanoseconds.
func (c *Consumer) Target() int64 { return c.windows.Deriver().Target() }

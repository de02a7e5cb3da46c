package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DCSettings is how distributed clocks are configured on the segment, as
// exported by the ecagent_dc_* gauges.
type DCSettings struct {
	// Enabled reports whether distributed clocks are configured at all;
	// when false the other fields are not exported (the gauges read 0,
	// the reference position −1).
	Enabled bool
	// ReferencePosition is the ring position of the reference clock (the
	// first slave with a system time unit).
	ReferencePosition int
	// Sync0Cycle is the SYNC0 cycle time.
	Sync0Cycle time.Duration
	// Sync0Shift is where SYNC0 lies in the cycle, on the distributed-clock
	// time.
	Sync0Shift time.Duration
	// Sync1Shift is the shift of SYNC1 from SYNC0, 0 without SYNC1.
	Sync1Shift time.Duration
}

// dcGauges are the gauges of DCSettings.
type dcGauges struct {
	enabled, reference, sync0Cycle, sync0Shift, sync1Shift prometheus.Gauge
}

func newDCGauges(b *builder) dcGauges {
	g := dcGauges{
		enabled:    b.gauge(nameDCEnabled),
		reference:  b.gauge(nameDCReference),
		sync0Cycle: b.gauge(nameDCSync0Cycle),
		sync0Shift: b.gauge(nameDCSync0Shift),
		sync1Shift: b.gauge(nameDCSync1Shift),
	}
	g.set(DCSettings{})
	return g
}

func (g *dcGauges) set(cfg DCSettings) {
	if !cfg.Enabled {
		cfg = DCSettings{ReferencePosition: -1}
	}
	enabled := 0.0
	if cfg.Enabled {
		enabled = 1
	}
	g.enabled.Set(enabled)
	g.reference.Set(float64(cfg.ReferencePosition))
	g.sync0Cycle.Set(cfg.Sync0Cycle.Seconds())
	g.sync0Shift.Set(cfg.Sync0Shift.Seconds())
	g.sync1Shift.Set(cfg.Sync1Shift.Seconds())
}

// SetDC exports the distributed-clock configuration: the agent calls it
// once the cycle process has configured the clocks (and with a zero
// DCSettings when it runs without them). Until the first call the gauges
// say "off". It is safe for concurrent use.
func (r *Registry) SetDC(cfg DCSettings) { r.dc.set(cfg) }

package metrics

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecagent/ecagent/agent/busstate"
)

// slaveStates renders what the bus model (package busstate) knows of each
// slave, at scrape time: the registry keeps no state of the slaves of its
// own, so a scrape shows exactly what /readyz, MQTT and the log show.
//
// The encoding follows the Prometheus conventions for states:
//   - ecagent_slave_up is 1 while the slave answers (present or being
//     reconnected) and 0 while it does not (lost, or another device at
//     its position); `== 0` alerts on it, as on Prometheus's own up.
//   - ecagent_slave_al_state is the AL state as last read while the slave
//     answers, and 0 while it does not: a slave that does not answer has
//     no state to report, and the OP it was last seen in must not stand
//     for one. Dropping the series instead would make `!= 8` quiet.
//   - ecagent_slave_al_error is the AL status register's error bit, so
//     SAFEOP+ERR is al_state 4 with al_error 1 (and, when the slave said
//     why, the code in ecagent_slave_al_status_code).
//   - ecagent_slave_presence and ecagent_slave_data_quality are state
//     sets: 1 for the current value, and with DetailFull one series per
//     other value at 0 (so a change flips two series instead of creating
//     one); either way `{presence="lost"} == 1` selects the lost slaves.
//   - ecagent_slave_data_quality_since_timestamp_seconds is the Unix time
//     the data quality took its current value; `time() - …` is how long
//     a slave's values have been stale. With DetailStandard it is
//     exported while the quality is not good, and the AL status code
//     while it is not 0.
//
// ecagent_cycle_process_up is rendered here too, from the same snapshot
// (CycleRunning and not CycleStalled), so that no scrape shows the cycle
// process down beside slaves that answer; before the agent has a model,
// from what the agent last told the registry (processUp). So is
// ecagent_cycle_process_bringup_failures, the model's BringUp: one series
// per reason, the failures in a row under the last one's.
type slaveStates struct {
	model     atomic.Pointer[busstate.Model]
	processUp atomic.Bool

	up, alState, alError, alStatus, presence, quality, since, cycleUp, bringUp *prometheus.Desc
	detail                                                                     Detail
}

func newSlaveStates(catalog []Series, detail Detail) *slaveStates {
	desc := func(name string, extra ...string) *prometheus.Desc {
		return prometheus.NewDesc(name, helpOf(catalog, name), append([]string{labelPosition, labelName}, extra...), nil)
	}
	return &slaveStates{
		detail:   detail,
		up:       desc(nameSlaveUp),
		alState:  desc(nameSlaveALState),
		alError:  desc(nameSlaveALError),
		alStatus: desc(nameSlaveALStatus),
		presence: desc(nameSlavePresence, labelPresence),
		quality:  desc(nameSlaveQuality, labelQuality),
		since:    desc(nameSlaveQualitySince),
		cycleUp:  prometheus.NewDesc(nameProcessUp, helpOf(catalog, nameProcessUp), nil, nil),
		bringUp:  prometheus.NewDesc(nameBringUpFailures, helpOf(catalog, nameBringUpFailures), []string{labelReason}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *slaveStates) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.up, c.alState, c.alError, c.alStatus, c.presence, c.quality, c.since, c.cycleUp, c.bringUp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: one snapshot of the model per
// scrape, so that every series of a scrape tells the same moment.
func (c *slaveStates) Collect(ch chan<- prometheus.Metric) {
	m := c.model.Load()
	if m == nil {
		ch <- prometheus.MustNewConstMetric(c.cycleUp, prometheus.GaugeValue, oneIf(c.processUp.Load()))
		return
	}
	bus := m.Snapshot()
	ch <- prometheus.MustNewConstMetric(c.cycleUp, prometheus.GaugeValue, oneIf(bus.CycleRunning && !bus.CycleStalled))
	for _, r := range busstate.BringUpReasons {
		n := 0.0
		if f := bus.BringUp; !bus.CycleRunning && f.Failures > 0 && f.Reason == r {
			n = float64(f.Failures)
		}
		if n > 0 || c.detail.full() {
			ch <- prometheus.MustNewConstMetric(c.bringUp, prometheus.GaugeValue, n, r.String())
		}
	}
	for i := range bus.Slaves {
		s := &bus.Slaves[i]
		pos, name := strconv.Itoa(s.Position), s.Name
		gauge := func(d *prometheus.Desc, v float64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{pos, name}, extra...)...)
		}
		gauge(c.up, oneIf(bus.Answering(i)))
		gauge(c.alState, float64(bus.ALState(i)))
		gauge(c.alError, oneIf(s.AL.Error))
		full := c.detail.full()
		if full || s.ALStatusCode != 0 {
			gauge(c.alStatus, float64(s.ALStatusCode))
		}
		for _, p := range busstate.Presences {
			if full || s.Presence == p {
				gauge(c.presence, oneIf(s.Presence == p), p.String())
			}
		}
		for _, q := range busstate.Qualities {
			if full || s.Quality == q {
				gauge(c.quality, oneIf(s.Quality == q), q.String())
			}
		}
		if !s.Since.IsZero() && (full || s.Quality != busstate.QualityGood) {
			gauge(c.since, float64(s.Since.UnixNano())/1e9)
		}
	}
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// SetBusModel gives the registry the agent's bus model: from then on every
// scrape renders the per-slave state series (ecagent_slave_up,
// ecagent_slave_al_state, ecagent_slave_al_error,
// ecagent_slave_al_status_code, ecagent_slave_presence,
// ecagent_slave_data_quality and
// ecagent_slave_data_quality_since_timestamp_seconds) from
// m.Snapshot(). Without a model, or with nil, they are not exported. It
// is safe for concurrent use.
func (r *Registry) SetBusModel(m *busstate.Model) { r.slaves.model.Store(m) }

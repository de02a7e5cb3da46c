package metrics

import (
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/shm"
)

// lazyFamilies are the families DetailStandard thins out: of these, a
// series DetailFull exports and DetailStandard does not must be 0.
var lazyFamilies = map[string]bool{
	nameSlavePortErrors: true, nameSlaveESCErrors: true, nameRTCheck: true,
	nameSlavePresence: true, nameSlaveQuality: true, nameSlaveQualitySince: true,
	nameSlaveALStatus: true, nameBringUpFailures: true,
	nameCycleSpikes: true, nameCycleSpikeBlame: true, nameForensicsEnabled: true,
}

// TestStandardDetailOnlyDropsZeros renders the same history with both
// details: every series of the standard scrape is in the full one with
// the same value, and every series only the full scrape has is a zero of a
// thinned-out family — so a query that selects a non-zero value answers
// the same. An error counter that was non-zero stays exported at 0.
func TestStandardDetailOnlyDropsZeros(t *testing.T) {
	slaves := []busstate.SlaveInfo{{Position: 0, Name: "EK1100"}, {Position: 1, Name: "EL2004"}, {Position: 2, Name: "EL1014"}}
	steps := []struct {
		name string
		do   func(r *Registry)
	}{
		{"healthy", func(r *Registry) {
			r.SetSlaves([]Slave{{0, "EK1100"}, {1, "EL2004"}, {2, "EL1014"}})
			r.SetBusModel(testModel(t, slaves))
			for p := range 3 {
				r.SetSlaveErrorCounters(p, slaves[p].Name, ESCErrorCounters{})
			}
			must(t, r.SetRTCheck("clocksource", CheckPass))
			must(t, r.SetRTCheck("cpufreq_governor", CheckSkip))
			r.SetForensics(ForensicsOn)
		}},
		{"port errors and a failing check", func(r *Registry) {
			r.SetSlaveErrorCounters(2, "EL1014", ESCErrorCounters{Ports: [4]PortErrorCounters{{RXError: 3}, {LostLink: 1}}, PDI: 2})
			must(t, r.SetRTCheck("clocksource", CheckFail))
			r.SetBusModel(testModel(t, slaves,
				testEvent(shm.EventSlaveState, 1, esc.ALStatus{State: esc.StateSafeOp, Error: true}, 0x001B, ""),
				testEvent(shm.EventSlaveLost, 2, esc.ALStatus{}, 0, "does not answer")))
		}},
		{"counters cleared", func(r *Registry) {
			r.SetSlaveErrorCounters(2, "EL1014", ESCErrorCounters{})
		}},
	}
	full, standard := testOptions(), testOptions()
	standard.Detail = DetailStandard
	rf, rs := newTestRegistry(t, full), newTestRegistry(t, standard)
	var sawCleared bool
	for _, st := range steps {
		st.do(rf)
		st.do(rs)
		f, s := seriesOf(t, rf), seriesOf(t, rs)
		for k, v := range s {
			if !strings.HasPrefix(k.family, "ecagent_slave_") && !lazyFamilies[k.family] {
				continue // the rest is not thinned out; windows are NaN here
			}
			if fv, ok := f[k]; !ok || fv != v {
				t.Errorf("%s: standard exports %s = %v, full %v (present %v)", st.name, k, v, fv, ok)
			}
		}
		for k, v := range f {
			if _, ok := s[k]; ok || !strings.HasPrefix(k.family, "ecagent_") {
				continue
			}
			if k.family == nameSlaveQualitySince && f[seriesKey{nameSlaveQuality, `name=` + strings.SplitN(k.labels, "name=", 2)[1] + `,quality="good"`}] == 1 {
				continue // the since-time of good data: left out by design
			}
			if !lazyFamilies[k.family] || v != 0 {
				t.Errorf("%s: standard leaves out %s = %v, want only zeros of %v", st.name, k, v, lazyFamilies)
			}
		}
		if st.name == "counters cleared" {
			_, sawCleared = s[seriesKey{nameSlavePortErrors, `counter="rx_error",name="EL1014",port="0",position="2"`}]
		}
	}
	if !sawCleared {
		t.Error("a port counter that counted and was cleared is no longer exported; want it kept at 0")
	}
	if n, m := len(seriesOf(t, rs)), len(seriesOf(t, rf)); n >= m {
		t.Errorf("standard exports %d series, full %d: want fewer", n, m)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type seriesKey struct{ family, labels string }

// seriesOf gathers every ecagent_ gauge and counter series of r, keyed by
// family and its labels other than the fleet labels.
func seriesOf(t *testing.T, r *Registry) map[seriesKey]float64 {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[seriesKey]float64{}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_GAUGE && mf.GetType() != dto.MetricType_COUNTER {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case labelSite, labelLine, labelHost:
					continue
				}
				if labels != "" {
					labels += ","
				}
				labels += l.GetName() + `="` + l.GetValue() + `"`
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[seriesKey{mf.GetName(), labels}] = v
		}
	}
	return out
}

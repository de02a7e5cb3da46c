package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ecagent/ecagent/contract"
)

// EventCounterName is the Prometheus name of an event's own counter
// family (contract.EventCounter): ecagent_<stem>_total.
func EventCounterName(c contract.EventCounter) string { return "ecagent_" + c.Stem + "_total" }

// eventSeries documents the families of the events: the bus's events by
// kind, then the counter families of the events that have one, in the
// order of the event catalogue.
func eventSeries() []Series {
	out := []Series{{Name: nameBusEvents, Type: TypeCounter, Labels: []string{labelKind, labelPosition, labelName},
		Help: "Events of the bus by kind (slave-lost, slave-found, slave-reconnected, slave-refused, al-error, " +
			"al-acknowledged, recovery-failed, bus-alarm, bus-alarm-changed, bus-alarm-cleared, link-down, link-up, cycle-died, cycle-restarted, bring-up-failed, …) " +
			"and slave (position and name; position -1, name bus for the bus as a whole).",
		Conditional: "once such an event happened"}}
	for _, e := range contract.Events() {
		if c := e.Counter; c.Stem != "" {
			out = append(out, Series{Name: EventCounterName(c), Type: TypeCounter, Labels: []string{c.Label}, Help: c.Help})
		}
	}
	return out
}

// eventCounters registers the counter family of every event that has
// one, each label value of its row exported at 0 from the start.
func (b *builder) eventCounters() map[contract.EventKind]*prometheus.CounterVec {
	out := map[contract.EventKind]*prometheus.CounterVec{}
	for _, e := range contract.Events() {
		if c := e.Counter; c.Stem != "" {
			v := b.counterVec(EventCounterName(c), c.Label)
			for _, l := range c.LabelValues() {
				v.WithLabelValues(l)
			}
			out[e.Kind] = v
		}
	}
	return out
}

// AddEventValue adds n, an event's Value, to the counter family of the
// event kind (contract.EventCounter: ecagent_frames_discarded_total for
// contract.EventFramesDiscarded) under the label value label, the event's
// Text. A kind without a counter family is ignored. It is safe for
// concurrent use.
func (r *Registry) AddEventValue(kind contract.EventKind, label string, n uint64) {
	if c, ok := r.eventCounters[kind]; ok {
		c.WithLabelValues(label).Add(float64(n))
	}
}

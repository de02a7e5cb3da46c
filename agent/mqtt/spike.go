package mqtt

import (
	"encoding/json"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/contract"
)

// SpikeEvent is the spike of a cycle-spike event, as every scheme
// renders it: the JSON event's fields (spikeFields) and Sparkplug's
// Spikes/… node metrics come from it, never from a second account of
// the causes.
type SpikeEvent struct {
	// View is the spike as every output shows it (contract.SpikeView).
	View contract.SpikeView
	// Causes is View.Causes as JSON, as the event carries it.
	Causes json.RawMessage
}

// spikeField is one field of the cycle-spike event: its JSON key (also
// its Sparkplug name, under Spikes/Last/), its Sparkplug datatype and
// where its value comes from.
type spikeField struct {
	key string
	typ sparkplug.DataType
	// inJSON says the JSON event carries it; omitZero leaves it out of
	// the JSON event when zero; raw is a String holding JSON, which the
	// JSON event embeds as it is.
	inJSON, omitZero, raw bool
	// set puts the field's value of s into m's value field for typ.
	set func(s *SpikeEvent, m *sparkplug.Metric)
}

// spikeFields are the fields of the cycle-spike event after its kind, in
// the JSON event's order; culprit (the largest cause's name) is
// Sparkplug's only, for hosts that show a plain tag rather than parse
// causes.
func spikeFields() []spikeField {
	return []spikeField{
		{key: "cycle", typ: sparkplug.UInt64, inJSON: true, set: func(s *SpikeEvent, m *sparkplug.Metric) { m.Int = s.View.Cycle }},
		{key: "cause", typ: sparkplug.String, inJSON: true, set: func(s *SpikeEvent, m *sparkplug.Metric) { m.Str = s.View.Top }},
		{key: "culprit", typ: sparkplug.String, set: func(s *SpikeEvent, m *sparkplug.Metric) {
			if len(s.View.Causes) > 0 {
				m.Str = s.View.Causes[0].Name
			}
		}},
		{key: "late_us", typ: sparkplug.Double, inJSON: true, set: func(s *SpikeEvent, m *sparkplug.Metric) { m.Float = s.View.LateUS }},
		{key: "excess_us", typ: sparkplug.Double, inJSON: true, set: func(s *SpikeEvent, m *sparkplug.Metric) { m.Float = s.View.ExcessUS }},
		{key: "overrun", typ: sparkplug.Boolean, inJSON: true, set: func(s *SpikeEvent, m *sparkplug.Metric) { m.Bool = s.View.Overrun }},
		{key: "steal_us", typ: sparkplug.Double, inJSON: true, omitZero: true, set: func(s *SpikeEvent, m *sparkplug.Metric) { m.Float = s.View.StealUS }},
		{key: "incomplete", typ: sparkplug.Boolean, inJSON: true, omitZero: true, set: func(s *SpikeEvent, m *sparkplug.Metric) { m.Bool = s.View.Incomplete }},
		{key: "causes", typ: sparkplug.String, inJSON: true, raw: true, set: func(s *SpikeEvent, m *sparkplug.Metric) { m.Str = string(s.Causes) }},
	}
}

// appendSpikeFields writes the JSON event's fields of s.
func appendSpikeFields(o *jsonObject, s *SpikeEvent) {
	for _, f := range spikeFields() {
		if !f.inJSON {
			continue
		}
		var m sparkplug.Metric
		f.set(s, &m)
		if f.omitZero && m.Int == 0 && m.Float == 0 && !m.Bool && m.Str == "" {
			continue
		}
		switch {
		case f.raw:
			o.key(f.key)
			o.b = append(o.b, m.Str...)
		case f.typ == sparkplug.UInt64:
			o.uint(f.key, m.Int)
		case f.typ == sparkplug.Double:
			o.float(f.key, m.Float)
		case f.typ == sparkplug.Boolean:
			o.bool(f.key, m.Bool)
		default:
			o.string(f.key, m.Str)
		}
	}
}

// CycleSpike publishes an explained late cycle on …/events: kind
// cycle-spike, the cycle, its lateness and the causes largest first, as
// contract.SpikeView shows them (the same fields as /spikes and ecagent
// spikes --json). The renderer gets the spike too (Event.Spike):
// Sparkplug updates its Spikes/… node metrics with it.
func (p *Publisher) CycleSpike(sp *contract.CycleSpike, at time.Time) {
	s := SpikeEvent{View: sp.View()}
	causes, err := json.Marshal(s.View.Causes)
	if err != nil {
		return // plain strings and numbers: cannot fail
	}
	s.Causes = causes
	p.sequencer.eventWith(at, contract.EventCycleSpike.String(), &s, func(o *jsonObject) { appendSpikeFields(o, &s) })
}

package mqtt

import "time"

// What events.go uses of the publisher while its event path has not yet
// moved to the sequencer and the renderer (Renderer.Event): it numbers the
// cycle's events itself under the sequencer's lock (the sequencer's
// fields, promoted) and queues them on the JSON events topic. It goes
// once events.go renders through p.sequencer.event.

// compatScheme answers events.go's question to the renderer: the QoS of
// the events, that of the renderer's own event messages.
type compatScheme struct{ qos byte }

// newCompatScheme asks r the QoS it gives an event.
func newCompatScheme(r Renderer) compatScheme {
	ms := r.Event(nil, &Event{Kind: "probe", JSON: []byte("{}")})
	if len(ms) == 0 {
		return compatScheme{qos: 1}
	}
	return compatScheme{qos: ms[0].QoS}
}

// eventsQoS is the QoS the renderer gives an event.
func (c compatScheme) eventsQoS() byte { return c.qos }

// rejectLocked counts a refused write and answers it (refusals.reject).
func (p *Publisher) rejectLocked(at time.Time, re *RejectError, slave, signal, topic string) {
	p.refusals.reject(at, re, slave, signal, topic)
}

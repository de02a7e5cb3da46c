package mqtt

import (
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// The events on …/events: the cycle's events, the answers to writes, and
// how a cycle event is written as JSON.

// Event publishes an event of the cycle on …/events, as its row of the
// event catalogue (package contract) says: the answers to writes are
// matched to the writes, a device metric's event is not published. An
// event that may change what the bus model shows (a slave lost, found,
// refused, a state, the link) wakes the sampler, which renders the change.
func (p *Publisher) Event(ev *shm.Event, at time.Time) {
	e, ok := ev.Kind.Info()
	switch {
	case !ok || e.Origin != contract.OriginCycle || e.Route == contract.RouteNone:
		return
	case e.Route == contract.RouteWriteAnswer:
		p.writes.answer(ev, e, at)
		return
	}
	model := p.sampler.current.Load()
	p.sequencer.event(at, e.Name, func(o *jsonObject) { appendShmEvent(o, ev, e, model) })
	p.sampler.pokeState()
}

// appendShmEvent fills a JSON event from a cycle event of row e, after
// its time, number and kind: its cycle; for an event about one slave, its position ("slave")
// and published name ("slave_name", when the bus model knows it); then
// the fields the row shows (busstate.AppendEventFields): error codes are
// numbers with their "meaning".
func appendShmEvent(o *jsonObject, ev *shm.Event, e contract.EventInfo, model *Model) {
	o.uint("cycle", ev.Cycle)
	if e.PerSlave {
		appendSlave(o, ev, model)
	}
	var buf [6]busstate.EventField
	for _, f := range busstate.AppendEventFields(buf[:0], ev, e) {
		switch v := f.Value.(type) {
		case string:
			o.string(f.Key, v)
		case bool:
			o.bool(f.Key, v)
		case uint64:
			o.uint(f.Key, v)
		case int64:
			o.int(f.Key, v)
		case busstate.Code:
			o.int(f.Key, int64(v))
		}
	}
}

// appendSlave adds the position and, when the bus model knows it, the
// published name of the slave an event is about.
func appendSlave(o *jsonObject, ev *shm.Event, model *Model) {
	o.int("slave", int64(ev.Slave))
	if model == nil {
		return
	}
	for i := range model.Devices {
		if model.Devices[i].Slave.Position == int(ev.Slave) {
			o.string("slave_name", model.Devices[i].Name)
		}
	}
}

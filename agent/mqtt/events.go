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
		p.answerWrite(ev, e, at)
		return
	}
	model := p.current.Load()
	p.eventLocked(at, func(o *jsonObject) { appendShmEvent(o, ev, e, model) })
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// answerWrite answers the write that the cycle's answer ev (of row e)
// answers, if it was one of this publisher's.
func (p *Publisher) answerWrite(ev *shm.Event, e contract.EventInfo, at time.Time) {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	w, ok := p.pending[ev.Value]
	if !ok {
		return // not one of ours
	}
	delete(p.pending, ev.Value)
	if ev.Kind == contract.EventCommandRejected {
		p.rejectLocked(at, reject(RejectCycleRefused, "the cycle refused it: %s", ev.TextString()), w.slave, w.signal, w.topic)
		return
	}
	p.eventLocked(at, func(o *jsonObject) {
		o.string("kind", e.Name)
		o.uint("cycle", ev.Cycle)
		o.string("slave", w.slave)
		o.string("signal", w.signal)
		o.float("value", w.value)
		o.string("topic", w.topic)
	})
}

// eventLocked queues one JSON event on …/events. Any lock but qmu may be
// held.
func (p *Publisher) eventLocked(at time.Time, fill func(o *jsonObject)) {
	p.qmu.Lock()
	defer p.qmu.Unlock()
	p.eventSeq++
	o := beginObject(p.out.buffer())
	o.int("ts", at.UnixMilli())
	o.uint("seq", p.eventSeq)
	fill(&o)
	p.push(message{topic: p.eventsTopic(), payload: o.end(), qos: p.sch.eventsQoS()}, at)
}

func (p *Publisher) eventsTopic() string { return p.cfg.Root + "/events" }

// appendShmEvent fills a JSON event from a cycle event of row e: its
// kind and cycle; for an event about one slave, its position ("slave")
// and published name ("slave_name", when the bus model knows it); then
// the fields the row shows (busstate.AppendEventFields): error codes are
// numbers with their "meaning".
func appendShmEvent(o *jsonObject, ev *shm.Event, e contract.EventInfo, model *Model) {
	o.string("kind", e.Name)
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

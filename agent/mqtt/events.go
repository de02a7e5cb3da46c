package mqtt

import (
	"fmt"
	"math"
	"time"

	"github.com/ecagent/ecagent/master/cia402/state"
	"github.com/ecagent/ecagent/shm"
)

// The events on …/events: the cycle's events, the answers to writes, and
// how a cycle event is written as JSON.

// Event publishes an event of the cycle on …/events; the answers to writes
// are matched to the writes. An event that may change what the bus model
// shows (a slave lost, found, refused, a state, the link) wakes the
// sampler, which renders the change.
func (p *Publisher) Event(ev *shm.Event, at time.Time) {
	switch ev.Kind {
	case shm.EventCommandDone, shm.EventCommandRejected:
		p.wmu.Lock()
		defer p.wmu.Unlock()
		w, ok := p.pending[ev.Value]
		if !ok {
			return // not one of ours
		}
		delete(p.pending, ev.Value)
		if ev.Kind == shm.EventCommandRejected {
			p.rejectLocked(at, reject(RejectCycleRefused, "the cycle refused it: %s", ev.TextString()), w.slave, w.signal, w.topic)
			return
		}
		p.eventLocked(at, func(o *jsonObject) {
			o.string("kind", "command-done")
			o.uint("cycle", ev.Cycle)
			o.string("slave", w.slave)
			o.string("signal", w.signal)
			o.float("value", w.value)
			o.string("topic", w.topic)
		})
		return
	case shm.EventInvalid, shm.EventErrorCounters:
		return // error counters are a metric (ecagent_slave_port_errors), not an event
	}
	model := p.current.Load()
	p.eventLocked(at, func(o *jsonObject) { appendShmEvent(o, ev, model) })
	select {
	case p.poke <- struct{}{}:
	default:
	}
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

// appendShmEvent fills a JSON event from a cycle event. Events about one
// slave carry its position ("slave") and published name ("slave_name",
// when the bus model knows it); error codes are numbers with their
// "meaning" (see EmergencyMeaning).
func appendShmEvent(o *jsonObject, ev *shm.Event, model *Model) {
	o.string("kind", ev.Kind.String())
	o.uint("cycle", ev.Cycle)
	text := ev.TextString()
	switch ev.Kind {
	case shm.EventStateChange, shm.EventALError:
		st := alStatus(ev.ALState)
		o.string("state", st.State.String())
		o.bool("error", st.Error)
		o.int("al_status_code", int64(ev.ALStatusCode))
		if ev.ALStatusCode != 0 {
			o.string("al_status", alStatusCode(ev.ALStatusCode))
		}
	case shm.EventSlaveState:
		appendSlave(o, ev, model)
		st := alStatus(ev.ALState)
		o.string("state", st.State.String())
		o.bool("error", st.Error)
		o.int("al_status_code", int64(ev.ALStatusCode))
		if ev.ALStatusCode != 0 {
			o.string("al_status", alStatusCode(ev.ALStatusCode))
		}
		text = "" // the state's name, written above
	case shm.EventBusAlarm, shm.EventBusAlarmChanged, shm.EventBusAlarmCleared:
		o.uint("cycles", ev.Value)
	case shm.EventMaintenance:
		appendSlave(o, ev, model)
		o.uint("uid", ev.Value)
	case shm.EventFramesDiscarded:
		o.string("reason", text)
		o.uint("frames", ev.Value)
		text = ""
	case shm.EventLinkDown, shm.EventLinkUp, shm.EventCycleStarted:
	case shm.EventSlaveReconnected:
		appendSlave(o, ev, model)
		o.int("took_us", int64(ev.Value/1000))
	case shm.EventALAcknowledged, shm.EventRecoveryFailed:
		appendSlave(o, ev, model)
		o.int("al_status_code", int64(ev.ALStatusCode))
		if ev.ALStatusCode != 0 {
			o.string("al_status", alStatusCode(ev.ALStatusCode))
		}
		if ev.Kind == shm.EventRecoveryFailed {
			o.uint("attempts", ev.Value)
		}
	case shm.EventEmergency:
		appendSlave(o, ev, model)
		code, register, data := ev.Emergency()
		o.int("error_code", int64(code))
		o.int("error_register", int64(register))
		o.string("data", hexBytes(data))
		o.string("meaning", EmergencyMeaning(code))
	case shm.EventDriveState:
		appendSlave(o, ev, model)
		o.string("state", driveStateName(ev, text))
		o.uint("state_number", ev.Value)
		text = "" // the state's name, written above
	case shm.EventDriveFault:
		appendSlave(o, ev, model)
		code := uint16(ev.Value)
		o.int("error_code", int64(code))
		o.string("meaning", EmergencyMeaning(code))
		if text != "" {
			o.string("state", text)
		}
		text = ""
	default:
		appendSlave(o, ev, model)
	}
	if text != "" {
		o.string("text", text)
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

// driveStateName is the name of a drive-state event's state: the name the
// cycle sent, else the standard one of its number (package state's); a
// number that names no state is written "DriveState(n)", n at most
// MaxInt32, as the events have always shown it.
func driveStateName(ev *shm.Event, text string) string {
	if text != "" {
		return text
	}
	if s, ok := state.FromNumber(ev.Value); ok {
		return s.String()
	}
	return fmt.Sprintf("DriveState(%d)", min(ev.Value, math.MaxInt32))
}

// hexBytes formats b as lower-case hexadecimal, two digits a byte.
func hexBytes(b [5]byte) string {
	const digits = "0123456789abcdef"
	var out [2 * len(b)]byte
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&0xF]
	}
	return string(out[:])
}

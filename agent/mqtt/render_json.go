package mqtt

import (
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/mqtt/cmdparse"
)

// JSONOptions configure the JSON scheme.
type JSONOptions struct {
	// Root is the topic root, <prefix>/<site>/<host>.
	Root string
	// QoS is the quality of service of the process data, the statistics
	// and the events (status, state and meta go at QoS 1, retained).
	QoS byte
	// Logger receives the renderer's log; nil discards it.
	Logger *slog.Logger
}

// JSONRenderer renders the bus as JSON under the root: status (the
// connection), state (the bus's readiness), meta (each slave, with its
// state), pd (its values, with their quality), stats and events; writes
// come in on set/<slave>/<signal>. It keeps the retained meta tidy: the
// meta of a slave gone from the bus is cleared.
type JSONRenderer struct {
	root  string
	qos   byte
	log   *slog.Logger
	metas metaKeeper
}

var _ Renderer = (*JSONRenderer)(nil)

// NewJSONRenderer returns the JSON scheme for o.
func NewJSONRenderer(o JSONOptions) *JSONRenderer {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &JSONRenderer{root: o.Root, qos: o.QoS, log: o.Logger}
}

func (j *JSONRenderer) statusTopic() string        { return j.root + "/status" }
func (j *JSONRenderer) stateTopic() string         { return j.root + "/state" }
func (j *JSONRenderer) metaTopic(d *Device) string { return j.root + "/meta/" + d.Name }
func (j *JSONRenderer) setTopic(d *Device) string  { return j.root + "/set/" + d.Name }
func (j *JSONRenderer) retained(topic string, payload []byte) Message {
	return Message{Topic: topic, Payload: payload, QoS: 1, Retain: true}
}

// Will is status offline, retained.
func (j *JSONRenderer) Will(uint64) Message { return j.retained(j.statusTopic(), []byte("offline")) }

// Goodbye is the will.
func (j *JSONRenderer) Goodbye(uint64) Message { return j.Will(0) }

// Subscriptions are the writes, and the retained meta (to clear that of
// slaves that left; a broker refusing it leaves them).
func (j *JSONRenderer) Subscriptions() []Subscription {
	return []Subscription{{Filter: j.root + "/set/#", QoS: 1}, {Filter: j.root + "/meta/+", QoS: 1, Optional: true}}
}

// Announce: status online, the bus's state, and every slave's meta.
func (j *JSONRenderer) Announce(ms []Message, v *BusView, _ uint64) []Message {
	ms = append(ms, j.retained(j.statusTopic(), []byte("online")))
	if v == nil {
		return ms
	}
	if v.HasState {
		ms = append(ms, j.retained(j.stateTopic(), appendBusState(nil, &v.State, v.Now)))
	}
	for i := range v.Model.Devices {
		ms = j.appendMeta(ms, v.Device(i))
	}
	return ms
}

// Prepare sends every message as it is.
func (j *JSONRenderer) Prepare(*Message, *DeviceView) bool { return true }

// DataMessage: <root>/pd/<slave>.
func (j *JSONRenderer) DataMessage(d *Device) Message {
	return Message{Topic: j.root + "/pd/" + d.Name, QoS: j.qos, Kind: KindData}
}

// Data renders a pd payload.
func (j *JSONRenderer) Data(b []byte, v *DeviceView) []byte {
	return appendProcessData(b, v.Device, v.Values, pdHeader{tsMillis: v.Now.UnixMilli(), seq: v.Seq, cycle: v.Cycle,
		quality: v.Slave.Quality, since: v.Slave.Since})
}

// appendMeta appends a device's retained meta message.
func (j *JSONRenderer) appendMeta(ms []Message, v *DeviceView) []Message {
	b, err := metaJSON(v.Device, &v.Slave, v.DataTopic, j.setTopic(v.Device))
	if err != nil {
		j.log.Error("mqtt: meta", "err", err)
		return ms
	}
	return append(ms, j.retained(j.metaTopic(v.Device), b))
}

// Attached clears the meta of slaves the new bus does not have, then
// publishes the bus's state and every slave's meta.
func (j *JSONRenderer) Attached(ms []Message, v *BusView) []Message {
	ms = j.metaAttached(ms, v)
	ms = j.BusChanged(ms, v)
	for i := range v.Model.Devices {
		ms = j.appendMeta(ms, v.Device(i))
	}
	return ms
}

// Detached shows every device's data stale from now, in its meta and in
// one last pd message with the last values.
func (j *JSONRenderer) Detached(ms []Message, v *BusView, _ string) []Message {
	ms = j.BusChanged(ms, v)
	for i := range v.Model.Devices {
		dv := v.Device(i)
		ms = j.appendMeta(ms, dv)
		ms = appendQuality(ms, dv)
	}
	return ms
}

// Changed publishes the new state in the device's meta and, when the
// quality of its data changed, in a pd message: the last values, marked
// stale (or null, invalid). While the data is not good no other pd is
// published, so nothing presents them as fresh readings.
func (j *JSONRenderer) Changed(ms []Message, v *DeviceView, was busstate.Slave) []Message {
	ms = j.appendMeta(ms, v)
	if v.Slave.Quality != was.Quality {
		ms = appendQuality(ms, v)
	}
	return ms
}

// appendQuality asks for a pd message saying the device's data is not
// good (KindData without payload).
func appendQuality(ms []Message, v *DeviceView) []Message {
	if len(v.Device.Signals) == 0 || v.Slave.Quality == busstate.QualityGood {
		return ms
	}
	return append(ms, Message{Kind: KindData, Device: v.Device.Name, Index: v.Index, Gen: v.Gen})
}

// BusChanged publishes the bus's state, retained.
func (j *JSONRenderer) BusChanged(ms []Message, v *BusView) []Message {
	if !v.HasState {
		return ms
	}
	return append(ms, j.retained(j.stateTopic(), appendBusState(nil, &v.State, v.Now)))
}

// Window publishes the statistics on <root>/stats.
func (j *JSONRenderer) Window(ms []Message, r *cyclestats.Report, s Stamp) []Message {
	return append(ms, Message{Topic: j.root + "/stats", Payload: appendStats(nil, r, s.At.UnixMilli(), s.Seq), QoS: j.qos})
}

// Event publishes the event on <root>/events.
func (j *JSONRenderer) Event(ms []Message, e *Event) []Message {
	return append(ms, Message{Topic: j.root + "/events", Payload: e.JSON, QoS: j.qos})
}

// Refused: the command-rejected event says it all.
func (j *JSONRenderer) Refused(ms []Message, _ *Refusal) []Message { return ms }

// Command takes a write on <root>/set/<slave>/<signal> (a value, or an
// object with the value and the time it was sent: ParseCommandValue), and
// the retained meta the broker holds.
func (j *JSONRenderer) Command(as []Action, topic string, payload []byte, _ *Model) []Action {
	if rest, ok := strings.CutPrefix(topic, j.root+"/set/"); ok {
		return append(as, j.write(topic, rest, payload))
	}
	if j.isMetaTopic(topic) {
		return j.metaSeen(as, topic, payload)
	}
	return as
}

// write is the action of a message on <root>/set/<rest>.
func (j *JSONRenderer) write(topic, rest string, payload []byte) Action {
	slave, signal, ok := commandTarget(rest)
	if !ok {
		return Action{Kind: ActionRefuse, Topic: topic, Err: reject(RejectUnknown, "want %s/set/<slave>/<signal>", j.root)}
	}
	v, err := cmdparse.Parse(payload)
	a := Action{Kind: ActionWrite, Slave: slave, Signal: signal, Topic: topic, Value: func(s *Signal) (float64, uint64, error) {
		if err != nil {
			return 0, 0, reject(RejectMalformed, "%s", err.Error())
		}
		return checkValue(jsonValue(v), s)
	}}
	if err == nil && v.HasTS {
		a.Sent = time.UnixMilli(v.TS)
	}
	return a
}

// CommandOf: <root>/set/<slave>/<signal>.
func (j *JSONRenderer) CommandOf(topic string) (slave, signal string, ok bool) {
	rest, ok := strings.CutPrefix(topic, j.root+"/set/")
	if !ok {
		return "", "", false
	}
	slave, signal, _ = commandTarget(rest)
	return slave, signal, true
}

// appendBusState appends the retained state payload: whether the bus is
// ready and, when not, why, in the words of busstate.Bus.Ready; its
// summary as the status line shows it; and what it is made of.
func appendBusState(b []byte, bus *busstate.Bus, now time.Time) []byte {
	ready, why := bus.Ready()
	o := beginObject(b)
	o.int("ts", now.UnixMilli())
	o.bool("ready", ready)
	if !ready {
		o.string("why", why)
	}
	o.string("summary", bus.Summary())
	o.bool("cycle_running", bus.CycleRunning)
	o.bool("link_up", bus.LinkUp)
	o.bool("alarm", bus.Alarm)
	if bus.Alarm {
		o.string("alarm_text", bus.AlarmText)
	}
	counts := map[busstate.Presence]int{}
	for i := range bus.Slaves {
		counts[bus.Slaves[i].Presence]++
	}
	o.key("slaves")
	c := beginObject(o.b)
	for _, pr := range busstate.Presences {
		c.int(pr.String(), int64(counts[pr]))
	}
	o.b = c.end()
	return o.end()
}

// Clearing the retained meta of slaves that left: <root>/meta/<slave> is
// retained, so a slave gone from the bus (a new configuration, a slave
// removed) would go on being described forever. The renderer subscribes
// to <root>/meta/+: the broker hands it the retained meta there, and
// every meta topic no device of the attached bus has is cleared (an
// empty retained message). So is the meta of a device a new bus no longer
// has. Nothing is cleared before a bus is attached, nor when it is
// detached (its cycle process is restarting; the slaves did not leave).

// metaKeeper tracks the meta topics retained at the broker and those of
// the attached bus. Safe for concurrent use.
type metaKeeper struct {
	mu       sync.Mutex
	retained map[string]bool // meta topics seen retained, with a payload
	current  map[string]bool // the attached bus's; nil before the first
}

// metaSeen takes a message on <root>/meta/+: a retained meta the broker
// holds (or an echo of the renderer's own), cleared at once when no
// device of the attached bus has it.
func (j *JSONRenderer) metaSeen(as []Action, topic string, payload []byte) []Action {
	k := &j.metas
	k.mu.Lock()
	if len(payload) == 0 {
		delete(k.retained, topic)
		k.mu.Unlock()
		return as
	}
	if k.retained == nil {
		k.retained = map[string]bool{}
	}
	k.retained[topic] = true
	left := k.current != nil && !k.current[topic]
	k.mu.Unlock()
	if !left {
		return as
	}
	return append(as, Action{Kind: ActionPublish, Message: j.clearMeta(topic)})
}

// metaAttached notes the meta topics of a new bus and clears those of
// the previous bus, and those retained at the broker, that it has not.
func (j *JSONRenderer) metaAttached(ms []Message, v *BusView) []Message {
	k := &j.metas
	k.mu.Lock()
	gone := map[string]bool{}
	for t := range k.current {
		gone[t] = true
	}
	for t := range k.retained {
		gone[t] = true
	}
	k.current = map[string]bool{}
	for i := range v.Model.Devices {
		t := j.metaTopic(&v.Model.Devices[i])
		k.current[t] = true
		delete(gone, t)
	}
	k.mu.Unlock()
	for t := range gone {
		ms = append(ms, j.clearMeta(t))
	}
	return ms
}

// clearMeta returns the message clearing a retained meta topic.
func (j *JSONRenderer) clearMeta(topic string) Message {
	j.log.Info("mqtt: clearing the retained meta of a slave that left", "topic", topic)
	k := &j.metas
	k.mu.Lock()
	delete(k.retained, topic)
	k.mu.Unlock()
	return j.retained(topic, []byte{})
}

// isMetaTopic reports whether topic is one of the renderer's meta topics.
func (j *JSONRenderer) isMetaTopic(topic string) bool {
	rest, ok := strings.CutPrefix(topic, j.root+"/meta/")
	return ok && rest != "" && !strings.Contains(rest, "/")
}

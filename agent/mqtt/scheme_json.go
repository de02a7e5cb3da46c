package mqtt

import (
	"strings"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/metrics"
)

// jsonScheme renders the bus as JSON under <root>: status (the
// connection), state (the bus's readiness), meta (each slave, with its
// state), pd (its values, with their quality), stats and events.
type jsonScheme struct {
	p     *Publisher
	metas metaKeeper
}

var _ scheme = (*jsonScheme)(nil)

func (j *jsonScheme) root() string                  { return j.p.cfg.Root }
func (j *jsonScheme) dataTopic(d *Device) string    { return j.root() + "/pd/" + d.Name }
func (j *jsonScheme) commandTopic(d *Device) string { return j.root() + "/set/" + d.Name }
func (j *jsonScheme) dataMessage() message          { return message{qos: j.p.cfg.QoS, kind: kindData} }
func (j *jsonScheme) eventsQoS() byte               { return j.p.cfg.QoS }
func (j *jsonScheme) statusTopic() string           { return j.root() + "/status" }
func (j *jsonScheme) stateTopic() string            { return j.root() + "/state" }
func (j *jsonScheme) metaTopic(d *Device) string    { return j.root() + "/meta/" + d.Name }

func (j *jsonScheme) will(uint64) message {
	return message{topic: j.statusTopic(), payload: []byte("offline"), qos: 1, retain: true}
}

func (j *jsonScheme) goodbye(uint64) message { return j.will(0) }

func (j *jsonScheme) subscriptions() map[string]byte {
	return map[string]byte{j.root() + "/set/#": 1}
}

// announce: status online, the bus's state, and every slave's meta.
func (j *jsonScheme) announce(ms []message, v *busView, _ uint64) []message {
	ms = append(ms, message{topic: j.statusTopic(), payload: []byte("online"), qos: 1, retain: true})
	if v == nil {
		return ms
	}
	if v.hasState {
		ms = append(ms, message{topic: j.stateTopic(), payload: appendBusState(nil, &v.state, v.now), qos: 1, retain: true})
	}
	for i := range v.model.Devices {
		if b, ok := j.meta(v.device(i)); ok {
			ms = append(ms, message{topic: j.metaTopic(&v.model.Devices[i]), payload: b, qos: 1, retain: true})
		}
	}
	return ms
}

func (j *jsonScheme) prepare(*message) bool { return true }

// meta renders a device's retained meta message.
func (j *jsonScheme) meta(v *deviceView) ([]byte, bool) {
	b, err := metaJSON(v.d, &v.slave, v.st.pdTopic, j.commandTopic(v.d))
	if err != nil {
		j.p.log.Error("mqtt: meta", "err", err)
		return nil, false
	}
	return b, true
}

func (j *jsonScheme) queueMeta(v *deviceView) {
	if b, ok := j.meta(v); ok {
		j.p.push(message{topic: j.metaTopic(v.d), payload: b, qos: 1, retain: true}, v.now)
	}
}

func (j *jsonScheme) attached(v *busView) {
	j.metaAttached(v)
	j.busChanged(v)
	for i := range v.model.Devices {
		j.queueMeta(v.device(i))
	}
}

// detached shows every device's data stale from now, in its meta and in
// one last pd message with the last values.
func (j *jsonScheme) detached(v *busView, _ string) {
	j.busChanged(v)
	for i := range v.model.Devices {
		dv := v.device(i)
		j.queueMeta(dv)
		j.queueQuality(dv)
	}
}

func (j *jsonScheme) data(b []byte, v *deviceView, _ bool) []byte {
	return appendProcessData(b, v.d, v.vals, pdHeader{tsMillis: v.now.UnixMilli(), seq: v.st.seq, cycle: v.cycle,
		quality: v.slave.Quality, since: v.slave.Since})
}

// changed publishes the new state in the device's meta and, when the
// quality of its data changed, in a pd message: the last values, marked
// stale (or null, invalid). While the data is not good no other pd is
// published, so nothing presents them as fresh readings.
func (j *jsonScheme) changed(v *deviceView, was busstate.Slave) {
	j.queueMeta(v)
	if v.slave.Quality != was.Quality && v.slave.Quality != busstate.QualityGood {
		j.queueQuality(v)
	}
}

// queueQuality publishes a pd message saying the device's data is not
// good.
func (j *jsonScheme) queueQuality(v *deviceView) {
	if len(v.d.Signals) == 0 || v.slave.Quality == busstate.QualityGood {
		return
	}
	v.st.seq++
	b := j.data(j.p.out.buffer(), v, false)
	j.p.push(message{topic: v.st.pdTopic, payload: b, qos: j.p.cfg.QoS, kind: kindData, device: v.d.Name, dev: v.i, gen: v.gen}, v.now)
}

// busChanged publishes the bus's state, retained.
func (j *jsonScheme) busChanged(v *busView) {
	if !v.hasState {
		return
	}
	j.p.push(message{topic: j.stateTopic(), payload: appendBusState(j.p.out.buffer(), &v.state, v.now), qos: 1, retain: true}, v.now)
}

func (j *jsonScheme) window(r *metrics.WindowReport, at time.Time) {
	p := j.p
	p.qmu.Lock()
	defer p.qmu.Unlock()
	p.statsSeq++
	p.push(message{topic: j.root() + "/stats", payload: appendStats(p.out.buffer(), r, at.UnixMilli(), p.statsSeq), qos: p.cfg.QoS}, at)
}

func (j *jsonScheme) command(topic string, payload []byte) {
	if strings.HasPrefix(topic, j.root()+"/set/") {
		j.p.handleJSONWrite(topic, payload)
	} else if j.isMetaTopic(topic) {
		j.metaSeen(topic, payload)
	}
}

func (j *jsonScheme) commandOf(topic string) (slave, signal string, ok bool) {
	rest, ok := strings.CutPrefix(topic, j.root()+"/set/")
	if !ok {
		return "", "", false
	}
	slave, signal, _ = commandTarget(rest)
	return slave, signal, true
}

func (j *jsonScheme) refused(*RejectError, string, string, string, time.Time, uint64) {}

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

package mqtt

import (
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/ethercat/esc"
)

// scheme is one payload scheme: the topics, payloads, births and deaths,
// commands and data quality of one way of rendering the bus. Sampling, the
// outbox and the broker session are the publisher's and the same for
// every scheme; JSON (scheme_json.go) and Sparkplug B
// (sparkplug_scheme.go) implement it, and a third scheme would be a third
// implementation.
//
// The session's methods (will, subscriptions, announce, prepare, goodbye)
// run on the session goroutine only, which owns what they keep per
// connection. The sampler's (attached, detached, data, changed,
// busChanged) run with the publisher's sampling lock held. window,
// command and refused run on their caller's goroutine.
type scheme interface {
	// dataTopic is where device d's process data goes; commandTopic is
	// the topic writes to it come in on (without the signal level).
	dataTopic(d *Device) string
	commandTopic(d *Device) string
	// dataMessage is a process data message without topic and payload:
	// its QoS, kind and whether it carries a seq. eventsQoS is the QoS of
	// events.
	dataMessage() message
	eventsQoS() byte

	// will is the last will of a connection announcing bdSeq.
	will(bdSeq uint64) message
	// subscriptions are the command topics, with their QoS.
	subscriptions() map[string]byte
	// announce appends what a connection (or a rebirth) starts with, for
	// the bus v (nil without one).
	announce(ms []message, v *busView, bdSeq uint64) []message
	// prepare readies a message from the outbox for the connection: it
	// renders what is rendered at send time and reports false for a
	// message not to send (a birth already sent on this connection, data
	// of a device that is not born).
	prepare(m *message) bool
	// goodbye is the last message of a graceful close.
	goodbye(bdSeq uint64) message

	// attached queues what a newly attached bus starts with; detached
	// what a bus going away ends with.
	attached(v *busView)
	detached(v *busView, reason string)
	// data appends one device's process data to b.
	data(b []byte, v *deviceView, historical bool) []byte
	// changed queues what a change of a device's state (presence, AL
	// state, quality) publishes; was is the state shown before.
	changed(v *deviceView, was busstate.Slave)
	// busChanged queues what a change of the bus's state publishes.
	busChanged(v *busView)

	// window queues the statistics of one metrics window.
	window(r *metrics.WindowReport, at time.Time)
	// command takes a message on a subscribed topic; it must not block.
	command(topic string, payload []byte)
	// commandOf reports whether topic is one of the scheme's command
	// topics, and names the slave and signal it addresses as far as the
	// topic says ("" where it does not).
	commandOf(topic string) (slave, signal string, ok bool)
	// refused answers a refused write on the scheme's own topics, beyond
	// the command-rejected event every scheme publishes.
	refused(re *RejectError, slave, signal, topic string, at time.Time, n uint64)
}

// busView is the bus as the sampler holds it, for a scheme to render.
type busView struct {
	model  *Model
	states []deviceState
	img    []byte
	cycle  uint64
	gen    uint64
	// state is the bus's state when a busstate model is set.
	state    busstate.Bus
	hasState bool
	now      time.Time
}

// device returns the view of the i-th device.
func (v *busView) device(i int) *deviceView {
	st := &v.states[i]
	return &deviceView{i: i, d: &v.model.Devices[i], st: st, slave: st.shown, vals: st.last, cycle: v.cycle, gen: v.gen, now: v.now}
}

// deviceView is one device as a scheme renders it: its state and the raw
// values to show (the last ones received while its data was good).
type deviceView struct {
	i     int
	d     *Device
	st    *deviceState
	slave busstate.Slave
	vals  []uint64
	cycle uint64
	gen   uint64
	now   time.Time
}

// presentSlave is a slave's state when no busstate model is set: present
// in OP, its data good.
func presentSlave(d *Device, since time.Time) busstate.Slave {
	return busstate.Slave{Position: d.Slave.Position, Name: d.Name, Presence: busstate.PresencePresent,
		AL: esc.ALStatus{State: esc.StateOp}, Quality: busstate.QualityGood, Since: since}
}

// sameShown reports whether two states of a slave render the same.
func sameShown(a, b busstate.Slave) bool {
	return a.Presence == b.Presence && a.AL == b.AL && a.ALStatusCode == b.ALStatusCode &&
		a.Quality == b.Quality && a.Since.Equal(b.Since) && a.Found == b.Found
}

package mqtt

import (
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/ethercat/esc"
)

// Renderer is one payload scheme: the topics and payloads of one way of
// showing the bus — births and deaths, process data and its quality, the
// window statistics, the events, the answers to refused writes — and what
// it makes of the messages on its command topics. It renders values (a
// view of the bus or a device, a window report, an event) into messages
// and never publishes one itself: sampling, numbering, the outbox, the
// broker session and the writes to the cycle are the Publisher's, the
// same for every scheme. NewJSONRenderer and NewSparkplugRenderer are the
// two schemes ecagent ships; Config.Renderer takes any other.
//
// The Publisher calls the session's methods (Will, Subscriptions,
// Announce, Prepare, Goodbye) on its session goroutine only, which may
// own what a renderer keeps per connection; the bus's (DataMessage, Data,
// Attached, Detached, Changed, BusChanged) one at a time, under the lock
// of the bus being sampled; Window, Event and Refused from any goroutine,
// one at a time; Command and CommandOf on the connection's reader, which
// they must not block. A renderer guards what these groups share.
type Renderer interface {
	// Will is the last will of a connection announcing bdSeq (Sparkplug's
	// birth/death sequence number, 0–255, one up at each connection).
	Will(bdSeq uint64) Message
	// Subscriptions are the topics to subscribe to on each connection:
	// the command topics (writes are subscribed to even when disabled,
	// so that they are answered) and any other the renderer watches.
	Subscriptions() []Subscription
	// Announce appends what a connection, or a rebirth, starts with for
	// the bus v (nil without one); its devices show the current values.
	Announce(dst []Message, v *BusView, bdSeq uint64) []Message
	// Prepare readies a message from the outbox as it is sent: it
	// renders what is rendered at send time (a birth, of the device v,
	// with the current values: nil when that bus is gone) and reports
	// false for a message not to send on this connection.
	Prepare(m *Message, v *DeviceView) bool
	// Goodbye is the last message of a graceful close.
	Goodbye(bdSeq uint64) Message

	// DataMessage is the message a device's process data goes in, without
	// payload: topic, QoS, kind.
	DataMessage(d *Device) Message
	// Data appends the payload of device v's process data to b; it must
	// not allocate beyond b's growth, being called for every publication.
	Data(b []byte, v *DeviceView) []byte
	// Attached appends what a newly attached bus starts with, Detached
	// what a bus going away (its cycle process stopping) ends with.
	Attached(dst []Message, v *BusView) []Message
	Detached(dst []Message, v *BusView, reason string) []Message
	// Changed appends what a change of a device's state (presence, AL
	// state, data quality) publishes; was is the state shown before.
	Changed(dst []Message, v *DeviceView, was busstate.Slave) []Message
	// BusChanged appends what a change of the bus's state publishes.
	BusChanged(dst []Message, v *BusView) []Message

	// Window appends the messages of the statistics of one closed window.
	Window(dst []Message, r *cyclestats.Report, s Stamp) []Message
	// Event appends the messages of one event.
	Event(dst []Message, e *Event) []Message
	// Refused appends the answer to a refused write on the scheme's own
	// topics, beyond the command-rejected event every refusal makes.
	Refused(dst []Message, r *Refusal) []Message

	// Command appends what a message on one of the renderer's
	// subscriptions asks for; m is the bus published now (nil without
	// one). It must not block.
	Command(dst []Action, topic string, payload []byte, m *Model) []Action
	// CommandOf reports whether topic is one of the renderer's command
	// topics, and names the slave and signal it addresses as far as the
	// topic says ("" where it does not).
	CommandOf(topic string) (slave, signal string, ok bool)
}

// Message is one MQTT publication a renderer makes.
type Message struct {
	Topic   string
	Payload []byte
	QoS     byte
	Retain  bool
	// Sparkplug marks a Sparkplug B payload: the session appends the
	// connection's seq (0–255) to it when it sends it, and one buffered by
	// an earlier run is marked historical when it is sent.
	Sparkplug bool
	// Kind is what the message is to its renderer when it is sent
	// (Prepare). Device, Index and Gen locate the device a device message
	// is about: its published name, its index in Model.Devices and the
	// bus it was rendered for (BusView.Gen).
	Kind   MessageKind
	Device string
	Index  int
	Gen    uint64
}

// MessageKind is what a message is to its renderer.
type MessageKind uint8

// The message kinds. The zero value is a message sent as it is.
const (
	// KindPlain is a message sent as it is.
	KindPlain MessageKind = iota
	// KindData is a device's process data. One without payload that
	// Changed or Detached appends asks for the device's data message now:
	// the publisher numbers it (DeviceView.Seq) and renders it with Data.
	KindData
	// KindBirth is a device's birth, rendered when it is sent (Prepare),
	// so that it carries the values and state of that moment; it has no
	// payload until then and is not kept across restarts.
	KindBirth
	// KindDeath is a device's death.
	KindDeath
)

// Subscription is a topic filter a renderer subscribes to.
type Subscription struct {
	Filter string
	QoS    byte
	// Optional: a broker refusing it is logged, and the connection goes
	// on; a refused command topic ends the connection.
	Optional bool
}

// BusView is the bus as the publisher holds it, for a renderer to render.
// It is valid during the call it is passed to.
type BusView struct {
	// Model is the bus as published.
	Model *Model
	// Gen counts the buses attached (Publisher.SetBus): a device message
	// carries the Gen of its bus, so that one of an earlier bus is known.
	Gen uint64
	// Cycle is the cycle of the process image snapshot the view shows (0
	// when it shows none).
	Cycle uint64
	// State is the bus's state from the bus model, when HasState (a
	// Publisher without a bus model shows every slave present in OP).
	State    busstate.Bus
	HasState bool
	// Now is when the view was taken.
	Now time.Time
	// Offline is set while the broker is out of reach: what is rendered
	// now is delivered later (Sparkplug marks it historical).
	Offline bool

	states []deviceState
	img    []byte // the snapshot of a view for births, else nil
}

// Device returns the view of the i-th device of the bus. In a view for
// births (Announce) a device whose data is good shows the values of the
// snapshot, else the last good ones.
func (v *BusView) Device(i int) *DeviceView {
	dv := new(DeviceView)
	v.device(dv, i)
	return dv
}

// device fills dv with the view of the i-th device.
func (v *BusView) device(dv *DeviceView, i int) {
	d, st := &v.Model.Devices[i], &v.states[i]
	*dv = DeviceView{Index: i, Device: d, Slave: st.shown, Values: st.last, Seq: st.seq, DataTopic: st.data.topic,
		Cycle: v.Cycle, Gen: v.Gen, Now: v.Now, Offline: v.Offline}
	if v.img != nil && st.shown.Quality == busstate.QualityGood {
		for k := range d.Signals {
			st.cur[k] = d.Signals[k].Raw(v.img)
		}
		dv.Values = st.cur
	}
}

// DeviceView is one device as a renderer renders it: its state and the
// raw values to show. It is valid during the call it is passed to.
type DeviceView struct {
	// Index is the device's index in Model.Devices.
	Index  int
	Device *Device
	// Slave is the device's state as shown.
	Slave busstate.Slave
	// Values are the raw values to show, one per signal (Signal.Float
	// and Signal.AppendJSON read them): the last ones received while the
	// data was good.
	Values []uint64
	// Seq numbers the device's data messages from 1: that of the message
	// Data renders.
	Seq uint64
	// DataTopic is where the device's process data goes (DataMessage).
	DataTopic  string
	Cycle, Gen uint64
	Now        time.Time
	Offline    bool
}

// Stamp is when a message is made and its number among the messages of
// its kind (the statistics windows, the events), from 1.
type Stamp struct {
	At      time.Time
	Seq     uint64
	Offline bool
}

// Event is one event of the bus, the cycle or the publisher, as every
// scheme publishes it: a JSON object with its time ("ts"), its number
// ("seq") and its kind, then its fields.
type Event struct {
	Stamp
	// Kind is the event's kind, e.g. "slave-lost".
	Kind string
	// JSON is the event's JSON object.
	JSON []byte
	// Spike is the spike of a cycle-spike event, nil for any other kind:
	// what a scheme shows of a spike beyond the event (Sparkplug's
	// Spikes/… node metrics) it renders from here, the data the JSON was
	// written from.
	Spike *SpikeEvent
}

// Refusal is a refused write, or a summary of those refused in a burst,
// as Renderer.Refused answers it.
type Refusal struct {
	Err                  RejectError
	Slave, Signal, Topic string
	// Count is the number of refusals it answers: 1, or that of a
	// summary (its Err, Slave, Signal and Topic are the last one's).
	Count   uint64
	At      time.Time
	Offline bool
}

// Action is what a message on a command topic asks of the publisher.
type Action struct {
	Kind ActionKind
	// Slave, Signal and Topic are what the command addresses: its
	// refusal names them.
	Slave, Signal, Topic string
	// Sent is the command's own time, zero when it carries none; a
	// command sent further than MaxCommandAge from the agent's clock is
	// refused (stale).
	Sent time.Time
	// Value decodes an ActionWrite's value for the signal it addresses:
	// the engineering value and the raw bits to write, or a *RejectError
	// (ParseCommandValue is the JSON scheme's).
	Value func(*Signal) (value float64, raw uint64, err error)
	// Rebirth is set in an ActionNode asking for the announcement again
	// (Sparkplug's Node Control/Rebirth).
	Rebirth bool
	// Err is an ActionRefuse's reason.
	Err *RejectError
	// Message is an ActionPublish's message.
	Message Message
}

// ActionKind is what an Action asks for.
type ActionKind uint8

// The actions.
const (
	// ActionWrite writes Value to Signal of Slave, once the publisher has
	// checked it (mqtt.writes, the signal's range, the command's age).
	ActionWrite ActionKind = iota + 1
	// ActionNode is a command to the agent itself (Rebirth).
	ActionNode
	// ActionRefuse refuses the command as Err says.
	ActionRefuse
	// ActionPublish publishes Message (e.g. clears a retained topic).
	ActionPublish
)

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

// internal returns m as the outbox keeps it.
func (m *Message) internal() message {
	return message{topic: m.Topic, payload: m.Payload, qos: m.QoS, retain: m.Retain, sparkplug: m.Sparkplug,
		kind: m.Kind, device: m.Device, dev: m.Index, gen: m.Gen}
}

// exported sets e to what the outbox's message m is to its renderer.
func (m *message) exported(e *Message) {
	*e = Message{Topic: m.topic, Payload: m.payload, QoS: m.qos, Retain: m.retain, Sparkplug: m.sparkplug,
		Kind: m.kind, Device: m.device, Index: m.dev, Gen: m.gen}
}

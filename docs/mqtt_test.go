package docs

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/agent/mqtt/broker"
	"github.com/ecagent/ecagent/agent/mqtt/ruleparse"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// The representative configuration the MQTT reference is rendered from.
const (
	mqttRoot  = "ecagent/" + docSite + "/" + docHost // <prefix>/<site>/<host>
	mqttGroup = docSite
	mqttNode  = docHost
)

// docBus is a small segment: a coupler without process data, a digital
// output, a digital input and an analog output terminal (which the
// publisher scales to volts).
func docBus() mqtt.Bus {
	digital := func(pos int, order string, out bool) mqtt.Slave {
		s := mqtt.Slave{Position: pos, OrderCode: order, DeviceName: order}
		dir, idx := "Input", uint16(0x6000)
		if out {
			dir, idx = "Output", 0x7000
			s.OutputBits = 4
		} else {
			s.InputBits = 4
		}
		for c := range 4 {
			s.Entries = append(s.Entries, mqtt.Entry{Output: out, PDO: 0x1600 + uint16(c), PDOName: fmt.Sprintf("Channel %d", c+1),
				Index: idx + uint16(0x10*c), SubIndex: 1, Name: dir, DataType: 1, Bits: 1, Offset: c})
		}
		return s
	}
	ao := mqtt.Slave{Position: 3, OrderCode: "EL4132", DeviceName: "EL4132", OutputOffset: 8, OutputBits: 32}
	for c := range 2 {
		ao.Entries = append(ao.Entries, mqtt.Entry{Output: true, PDO: 0x1600 + uint16(c), PDOName: fmt.Sprintf("AO Output Channel %d", c+1),
			Index: 0x7000 + uint16(0x10*c), SubIndex: 1, Name: "Analog output", DataType: 3, Bits: 16, Offset: 16 * c})
	}
	return mqtt.Bus{OutputBytes: 5, InputBytes: 1, Slaves: []mqtt.Slave{
		{Position: 0, OrderCode: "EK1100"}, digital(1, "EL2004", true), digital(2, "EL1014", false), ao,
	}}
}

type docImage struct{ cycle uint64 }

func (i *docImage) Snapshot(dst []byte) (uint64, bool) { i.cycle++; clear(dst); return i.cycle, true }

// docSink is a command ring that keeps the sequence numbers of the writes
// it is given, for the cycle's answer.
type docSink struct {
	mu   sync.Mutex
	seqs []uint64
}

func (s *docSink) Push(c *shm.Command) bool {
	s.mu.Lock()
	s.seqs = append(s.seqs, c.Seq)
	s.mu.Unlock()
	return true
}

func (s *docSink) pushed() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seqs)
}

// message is one message a subscriber to # received.
type message struct {
	topic    string
	qos      byte
	retained bool
	payload  []byte
}

// recorder subscribes to every topic of a broker.
type recorder struct {
	mu   sync.Mutex
	msgs []message
	c    paho.Client
}

func record(t *testing.T, url, id string) *recorder {
	t.Helper()
	r := &recorder{}
	r.c = paho.NewClient(paho.NewClientOptions().AddBroker(url).SetClientID(id).SetAutoReconnect(false))
	if tok := r.c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscriber: connecting: %v", tok.Error())
	}
	tok := r.c.Subscribe("#", 2, func(_ paho.Client, m paho.Message) {
		r.mu.Lock()
		r.msgs = append(r.msgs, message{m.Topic(), m.Qos(), m.Retained(), slices.Clone(m.Payload())})
		r.mu.Unlock()
	})
	if !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscriber: subscribing: %v", tok.Error())
	}
	t.Cleanup(func() { r.c.Disconnect(0) })
	return r
}

func (r *recorder) all() []message {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.msgs)
}

// waitFor waits until every topic of want has been received.
func (r *recorder) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		missing := slices.DeleteFunc(slices.Clone(want), func(topic string) bool {
			return slices.ContainsFunc(r.all(), func(m message) bool { return m.topic == topic })
		})
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var got []string
			for _, m := range r.all() {
				got = union(got, []string{m.topic})
			}
			t.Fatalf("no message on %v within 10 s; got %v", missing, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitForKinds waits until events of every kind in kinds have arrived on
// topic.
func (r *recorder) waitForKinds(t *testing.T, topic string, kinds ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		seen := map[string]bool{}
		for _, m := range r.all() {
			var ev struct{ Kind string }
			if m.topic == topic && json.Unmarshal(m.payload, &ev) == nil {
				seen[ev.Kind] = true
			}
		}
		missing := slices.DeleteFunc(slices.Clone(kinds), func(k string) bool { return seen[k] })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %v event on %s within 10 s", missing, topic)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// docEvents returns one event of every kind of the cycle process that
// the event catalogue routes to …/events, about slave 2 (a note has its
// text, an event with a counter of its own the label value); the answers to
// writes (the publisher matches them to a write of its own) come from the
// writes, and a device metric's event is not published.
func docEvents() []shm.Event {
	var out []shm.Event
	for _, e := range contract.Events() {
		if e.Origin != contract.OriginCycle || e.Route != contract.RouteEvents {
			continue
		}
		ev := shm.Event{Kind: e.Kind, Cycle: 1, Slave: 2, ALState: 0x14, ALStatusCode: 0x001B, Value: 8}
		switch {
		case e.Kind == contract.EventNote:
			ev.SetText("a note")
		case e.Counter.Stem != "":
			ev.SetText(e.Counter.LabelValues()[0]) // the label value it counts under: always there
		}
		out = append(out, ev)
	}
	return out
}

// windowReport is a closed window of 100 cycles with distributed clocks.
func windowReport(t *testing.T) cyclestats.Report {
	reg := agentRegistry(t)
	for i := range 100 {
		d := int64(1e9 + i*1e6)
		s := shm.Sample{Cycle: uint64(i), Deadline: d, Wake: d + 1e4, Send: d + 2e4, Recv: d + 3e4, End: d + 5e4,
			WKC: 3, ExpectedWKC: 3, Flags: shm.SampleDCValid | shm.SampleCtlValid, DCDiff: 10, CtlErr: 20}
		reg.Consumer().Observe(&s)
	}
	return reg.Consumer().CloseWindow()
}

// capture runs a publisher of the given scheme against an embedded broker
// through its life — bus attached, data, a statistics window, an event,
// a write allowed and one refused, the bus detached, closed — and returns
// what a subscriber to # received and which topics a new subscriber then
// finds retained.
func capture(t *testing.T, scheme mqtt.Scheme) (msgs []message, retained map[string]bool, model *mqtt.Model) {
	t.Helper()
	b, err := broker.Start("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = b.Close() }()
	rec := record(t, b.URL(), "doc-subscriber")

	w1, err1 := ruleparse.ParseWriteRule("EL2004-1/*")
	w2, err2 := ruleparse.ParseWriteRule("EL4132-3/ao_output_channel_1.analog_output -5..5")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	rules := mqtt.Rules{Interval: 50 * time.Millisecond, Writes: []ruleparse.WriteRule{w1, w2}}
	model, problems := mqtt.NewModel(docBus(), rules)
	if len(problems) > 0 {
		t.Fatalf("NewModel: %v", problems)
	}
	pub, err := mqtt.New(mqtt.Config{Broker: b.URL(), ClientID: "ecagent-doc", QoS: 1, Scheme: scheme, Root: mqttRoot,
		Group: mqttGroup, Node: mqttNode, Rules: rules, Buffer: 1000, Timeout: 2 * time.Second, WritesEnabled: true})
	if err != nil {
		t.Fatal(err)
	}
	sink := &docSink{}
	pub.SetBus(model, &docImage{}, sink)
	pub.Start()
	var data []string
	for _, d := range model.Devices {
		if len(d.Signals) == 0 {
			continue // a coupler publishes its meta only
		}
		if scheme == mqtt.SchemeSparkplug {
			data = append(data, sparkplug.DeviceTopic(mqttGroup, sparkplug.DDATA, mqttNode, d.Name))
		} else {
			data = append(data, mqttRoot+"/pd/"+d.Name)
		}
	}
	rec.waitFor(t, data...)

	r := windowReport(t)
	pub.Window(&r, time.Now())
	for _, ev := range docEvents() {
		pub.Event(&ev, time.Now())
	}
	if scheme == mqtt.SchemeJSON {
		for _, w := range [][2]string{{"EL2004-1/channel_1.output", "true"}, {"EL4132-3/ao_output_channel_1.analog_output", "9"}} {
			rec.c.Publish(mqttRoot+"/set/"+w[0], 1, false, w[1]).WaitTimeout(5 * time.Second)
		}
		deadline := time.Now().Add(10 * time.Second)
		for len(sink.pushed()) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the allowed write did not reach the command ring within 10 s")
			}
			time.Sleep(10 * time.Millisecond)
		}
		done := shm.Event{Kind: shm.EventCommandDone, Value: sink.pushed()[0], Cycle: 1}
		pub.Event(&done, time.Now())
		rec.waitFor(t, mqttRoot+"/stats")
		rec.waitForKinds(t, mqttRoot+"/events", "command-done", "command-rejected")
	} else {
		rec.waitFor(t, sparkplug.NodeTopic(mqttGroup, sparkplug.NDATA, mqttNode))
	}
	pub.Detach("the cycle process stopped")
	if err := pub.Close(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if scheme == mqtt.SchemeSparkplug {
		rec.waitFor(t, sparkplug.NodeTopic(mqttGroup, sparkplug.NDEATH, mqttNode))
	} else {
		rec.waitFor(t, mqttRoot+"/status")
	}
	time.Sleep(100 * time.Millisecond)
	msgs = rec.all()

	late := record(t, b.URL(), "doc-late-subscriber")
	time.Sleep(300 * time.Millisecond)
	retained = map[string]bool{}
	for _, m := range late.all() {
		if m.retained {
			retained[m.topic] = true
		}
	}
	return msgs, retained, model
}

// pattern is one topic as the reference shows it, with what was seen on
// it.
type pattern struct {
	topic    string
	qos      []int
	retained bool
	fields   []string // payload fields, in the order first seen
	kinds    map[string][]string
}

func TestMQTTReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a broker and two publishers (about 2 s)")
	}
	jsonMsgs, jsonRetained, model := capture(t, mqtt.SchemeJSON)
	n := newNormalizer(model)
	jsonPatterns := patterns(jsonMsgs, jsonRetained, n)
	checkEventKinds(t, jsonPatterns)
	checkGenerated(t, "mqtt.md", "json-topics", renderTopics(jsonPatterns, true))
	spMsgs, spRetained, _ := capture(t, mqtt.SchemeSparkplug)
	checkGenerated(t, "mqtt.md", "sparkplug-topics", renderTopics(patterns(spMsgs, spRetained, n), false))
	checkGenerated(t, "mqtt.md", "inbound-topics", inbound(t, jsonMsgs, n))
}

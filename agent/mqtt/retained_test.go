package mqtt

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/ecagent/ecagent/agent/mqtt/broker"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/shm"
)

// publishOnce connects a client to url (as user, when set), publishes one
// message at QoS 1 and disconnects. It returns the publication's error: a
// broker that refuses it ends the connection.
func publishOnce(t *testing.T, url, id, user, password, topic string, payload []byte, retain bool) error {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetAutoReconnect(false).SetConnectRetry(false)
	if user != "" {
		o.SetUsername(user).SetPassword(password)
	}
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("%s: no connection within 5 s: %v", id, tok.Error())
	}
	defer c.Disconnect(0)
	tok := c.Publish(topic, 1, retain, payload)
	if !tok.WaitTimeout(2*time.Second) || tok.Error() != nil {
		if !c.IsConnectionOpen() {
			return errConnectionEnded
		}
		if tok.Error() == nil {
			t.Fatalf("%s: no PUBACK for %s within 2 s, and the connection is open", id, topic)
		}
	}
	return tok.Error()
}

// errConnectionEnded is publishOnce's error when the broker ended the
// connection instead of acknowledging the publication.
var errConnectionEnded = errors.New("the broker ended the connection")

// waitRejected waits until the publisher counted n refusals of code.
func waitRejected(t *testing.T, p *Publisher, code RejectCode, n uint64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); p.Stats().Rejected[code] < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d %s refusals within 10 s, want %d: %+v", p.Stats().Rejected[code], code, n, p.Stats())
		}
	}
}

// waitCommands waits until the ring holds n commands and returns them.
func waitCommands(t *testing.T, ring *fakeRing, n int) []shm.Command {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(ring.all()) < n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d commands within 10 s, want %d: %+v", len(ring.all()), n, ring.all())
		}
	}
	return ring.all()
}

// retainedRefusal waits for the command-rejected event of a retained
// command on topic, from index from on.
func retainedRefusal(t *testing.T, events *subscriber, from int, topic string) {
	t.Helper()
	events.waitFrom(t, from, "/events", 10*time.Second, func(m received) bool {
		s := string(m.payload)
		return strings.Contains(s, `"kind":"command-rejected"`) && strings.Contains(s, `"code":"retained"`) &&
			strings.Contains(s, "retained command ignored") && strings.Contains(s, `"topic":"`+topic+`"`)
	})
}

// TestRetainedJSONCommandNeverRuns is issue 30's first defect on a real
// mosquitto, which keeps what is published with the retain flag and
// delivers it, retain flag set, at every new subscription (MQTT 3.1.1
// §3.3.1.3): a command published retained (true) before the agent
// connects, then a live one (false). The retained one is refused with an
// event at every (re)subscription and never reaches the cycle; the live
// one does, once.
func TestRetainedJSONCommandNeverRuns(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/retained"
	topic := root + "/set/EL2004-1/channel_4.output"
	if err := publishOnce(t, broker.URL(), "op-retained", "", "", topic, []byte("true"), true); err != nil {
		t.Fatal(err)
	}
	events := subscribe(t, broker.URL(), "events", root+"/events", false)
	p, _, ring := newTestPublisher(t, Config{Broker: broker.URL(), QoS: 1, Root: root, WritesEnabled: true,
		Rules: mustRules(t, nil, nil, []string{"EL2004-1/*"})})
	retainedRefusal(t, events, 0, topic)
	waitRejected(t, p, RejectRetained, 1)

	if err := publishOnce(t, broker.URL(), "op-live", "", "", topic, []byte("false"), false); err != nil {
		t.Fatal(err)
	}
	if cmds := waitCommands(t, ring, 1); len(cmds) != 1 || cmds[0].Value != 0 || cmds[0].BitOffset != 3 {
		t.Fatalf("commands %+v, want the live false only", cmds)
	}

	// The broker delivers the retained command again at the next
	// subscription (an agent restart, a reconnect): refused again.
	from := len(events.all())
	p.session.conn.Load().Close()
	retainedRefusal(t, events, from, topic)
	waitRejected(t, p, RejectRetained, 2)
	waitServing(t, p, events)
	if cmds := ring.all(); len(cmds) != 1 {
		t.Fatalf("commands after the reconnect %+v, want the live false only", cmds)
	}
}

// TestRetainedSparkplugCommandNeverRuns: the same for a retained DCMD (a
// write) and a retained NCMD (a rebirth request) on mosquitto.
func TestRetainedSparkplugCommandNeverRuns(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/retained-sp"
	dcmd := sparkplug.DeviceTopic("g", sparkplug.DCMD, "n", "EL2004-1")
	ncmd := sparkplug.NodeTopic("g", sparkplug.NCMD, "n")
	write := func(v bool) []byte {
		return sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(time.Now().UnixMilli()), Metrics: []sparkplug.Metric{
			{Name: "channel_4.output", DataType: sparkplug.Boolean, Bool: v, HasValue: true}}})
	}
	rebirth := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(time.Now().UnixMilli()), Metrics: []sparkplug.Metric{
		{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true, HasValue: true}}})
	if err := publishOnce(t, broker.URL(), "host-retained", "", "", dcmd, write(true), true); err != nil {
		t.Fatal(err)
	}
	if err := publishOnce(t, broker.URL(), "host-retained-ncmd", "", "", ncmd, rebirth, true); err != nil {
		t.Fatal(err)
	}
	// One subscriber for the events and the births, so that they arrive
	// in the order the publisher sent them: a second one could see the
	// marker event before the NBIRTH sent ahead of it.
	events := subscribe(t, broker.URL(), "events", "#", false)
	p, _, ring := newTestPublisher(t, Config{Broker: broker.URL(), Scheme: SchemeSparkplug, Group: "g", Node: "n", Root: root,
		WritesEnabled: true, Rules: mustRules(t, nil, nil, []string{"EL2004-1/*"})})
	retainedRefusal(t, events, 0, dcmd)
	retainedRefusal(t, events, 0, ncmd)
	waitRejected(t, p, RejectRetained, 2)

	if err := publishOnce(t, broker.URL(), "host-live", "", "", dcmd, write(false), false); err != nil {
		t.Fatal(err)
	}
	if cmds := waitCommands(t, ring, 1); len(cmds) != 1 || cmds[0].Value != 0 || cmds[0].BitOffset != 3 {
		t.Fatalf("commands %+v, want the live false only", cmds)
	}
	// A rebirth asked for by the retained NCMD would have been announced
	// before anything queued after it.
	waitServing(t, p, events)
	n := 0
	for _, m := range events.all() {
		if strings.HasSuffix(m.topic, "/NBIRTH/n") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d NBIRTHs on one connection: the retained NCMD made the node rebirth", n)
	}
}

// TestRetainedCommandOnTheEmbeddedBroker: with the embedded broker (as the
// agent wires it: command topics in NoRetain, RetainRefused answered by
// RefuseRetained), a command published retained is refused by the broker
// — never forwarded, never stored — and answered with the same event, in
// both schemes; the agent's reconnect finds nothing to run; a live
// command after it runs once.
func TestRetainedCommandOnTheEmbeddedBroker(t *testing.T) {
	for name, scheme := range map[string]Scheme{"json": SchemeJSON, "sparkplug": SchemeSparkplug} {
		t.Run(name, func(t *testing.T) {
			root := "ecagent/plant/edge1"
			topic := root + "/set/EL2004-1/channel_4.output"
			live, retained := []byte("false"), []byte("true")
			if scheme == SchemeSparkplug {
				topic = sparkplug.DeviceTopic("plant", sparkplug.DCMD, "edge1", "EL2004-1")
				write := func(v bool) []byte {
					return sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(time.Now().UnixMilli()), Metrics: []sparkplug.Metric{
						{Name: "channel_4.output", DataType: sparkplug.Boolean, Bool: v, HasValue: true}}})
				}
				live, retained = write(false), write(true)
			}
			var pub atomic.Pointer[Publisher]
			a := &broker.Auth{
				Agent:          broker.Credential{Username: "ecagent", Password: broker.NewSecret()},
				Operator:       broker.Credential{Username: "operator", Password: broker.NewSecret()},
				CommandFilters: []string{root + "/set/#", "spBv1.0/plant/DCMD/edge1/+"},
				NoRetain:       []string{root + "/set/#", "spBv1.0/plant/DCMD/edge1/+"},
				AnonymousRead:  true,
				AgentClientID:  "pub-" + root,
				RetainRefused: func(topic string) {
					if p := pub.Load(); p != nil {
						p.RefuseRetained(topic)
					}
				},
			}
			b, err := broker.StartAuth("127.0.0.1:0", nil, a)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			events := subscribe(t, b.URL(), "events", root+"/events", false)
			p, _, ring := newTestPublisher(t, Config{Broker: b.URL(), Scheme: scheme, Group: "plant", Node: "edge1", Root: root,
				Username: a.Agent.Username, Password: a.Agent.Password, WritesEnabled: true, Rules: mustRules(t, nil, nil, []string{"EL2004-1/*"})})
			pub.Store(p)
			waitServing(t, p, events)

			if err := publishOnce(t, b.URL(), "op-retained", a.Operator.Username, a.Operator.Password, topic, retained, true); !errors.Is(err, errConnectionEnded) {
				t.Fatalf("a retained command at QoS 1: %v, want the connection ended", err)
			}
			retainedRefusal(t, events, 0, topic)
			if err := publishOnce(t, b.URL(), "op-live", a.Operator.Username, a.Operator.Password, topic, live, false); err != nil {
				t.Fatal(err)
			}
			if cmds := waitCommands(t, ring, 1); len(cmds) != 1 || cmds[0].Value != 0 || cmds[0].BitOffset != 3 {
				t.Fatalf("commands %+v, want the live false only", cmds)
			}
			// Nothing stored: the agent's next subscription gets nothing.
			p.session.conn.Load().Close()
			for deadline := time.Now().Add(10 * time.Second); p.Stats().Reconnects == 0; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the agent did not reconnect")
				}
			}
			waitServing(t, p, events)
			if s := p.Stats(); len(ring.all()) != 1 || s.Rejected[RejectRetained] != 1 {
				t.Fatalf("after the reconnect: commands %+v, %d retained refusals; want the live one and the broker's refusal only",
					ring.all(), s.Rejected[RejectRetained])
			}
		})
	}
}

package broker

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

const agentID = "ecagent-plant-edge1"

// guardedAuth is testAuth with the agent's client id and its command
// topics, whose retained publications are refused and reported to
// refused.
func guardedAuth(refused *refusedTopics) *Auth {
	a := testAuth()
	a.AnonymousRead = true
	a.AgentClientID = agentID
	a.NoRetain = []string{"ecagent/plant/edge1/set/#", "spBv1.0/plant/NCMD/edge1", "spBv1.0/plant/DCMD/edge1/+"}
	a.CommandFilters = append(a.CommandFilters, "spBv1.0/plant/NCMD/edge1", "spBv1.0/STATE/+")
	a.RetainRefused = refused.add
	return a
}

// refusedTopics collects what the broker reports refused.
type refusedTopics struct {
	mu     sync.Mutex
	topics []string
}

func (r *refusedTopics) add(topic string) {
	r.mu.Lock()
	r.topics = append(r.topics, topic)
	r.mu.Unlock()
}

func (r *refusedTopics) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.topics)
}

// TestBrokerRefusesTheAgentsClientID: a client connecting with the
// agent's client id under any other credentials (an operator's,
// anonymous) is refused with "identifier rejected", and the agent's own
// connection stays up: before, the broker took the session over and
// disconnected the agent at each such connection, its status flipping
// offline and online (issue 30). The agent's own credentials may take its
// session over (a reconnect before the broker noticed the old one died).
func TestBrokerRefusesTheAgentsClientID(t *testing.T) {
	t.Parallel()
	a := guardedAuth(&refusedTopics{})
	b, err := StartAuth("127.0.0.1:0", nil, a)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	lost := make(chan error, 4)
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID(agentID).SetAutoReconnect(false).
		SetUsername(a.Agent.Username).SetPassword(a.Agent.Password).
		SetConnectionLostHandler(func(_ paho.Client, err error) { lost <- err })
	agent := paho.NewClient(o)
	if tok := agent.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("the agent: %v", tok.Error())
	}
	defer agent.Disconnect(0)
	for _, c := range []struct{ who, user, password string }{
		{"an operator", a.Operator.Username, a.Operator.Password},
		{"an anonymous client", "", ""},
	} {
		for range 3 {
			if _, err := connect(t, b, agentID, c.user, c.password); err == nil || !strings.Contains(err.Error(), "identifier rejected") {
				t.Fatalf("%s with the agent's client id: %v, want refused as identifier rejected", c.who, err)
			}
		}
	}
	// Other client ids are admitted as before.
	if _, err := connect(t, b, "op", a.Operator.Username, a.Operator.Password); err != nil {
		t.Fatalf("operator with its own id: %v", err)
	}
	// The agent was not disconnected: a round trip through the broker
	// after the refusals proves its connection is the one that served it.
	got := make(chan string, 1)
	if tok := agent.Subscribe("ecagent/plant/edge1/status", 1, func(_ paho.Client, m paho.Message) { got <- string(m.Payload()) }); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("the agent's connection after the refusals: %v", tok.Error())
	}
	agent.Publish("ecagent/plant/edge1/status", 1, false, "online").WaitTimeout(5 * time.Second)
	select {
	case <-got:
	case err := <-lost:
		t.Fatalf("the agent lost its connection: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's round trip did not come back")
	}
	select {
	case err := <-lost:
		t.Fatalf("the agent lost its connection: %v", err)
	default:
	}
	// The agent's own credentials take its session over.
	again, err := connect(t, b, agentID, a.Agent.Username, a.Agent.Password)
	if err != nil {
		t.Fatalf("the agent reconnecting: %v", err)
	}
	again.Disconnect(0)
	select {
	case <-lost:
	case <-time.After(5 * time.Second):
		t.Fatal("the agent's own reconnect did not take its session over")
	}
}

// TestBrokerRefusesRetainedCommands: a publication with the retain flag
// on a command topic is refused — dropped at QoS 0, the connection ended
// at QoS 1 (MQTT 3.1.1's PUBACK cannot refuse) — never forwarded, never
// stored, and reported; the same command without the flag goes through,
// and retained publications elsewhere (a Sparkplug host's STATE) are
// kept as before.
func TestBrokerRefusesRetainedCommands(t *testing.T) {
	t.Parallel()
	refused := &refusedTopics{}
	a := guardedAuth(refused)
	b, err := StartAuth("127.0.0.1:0", nil, a)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	agent, err := connect(t, b, agentID, a.Agent.Username, a.Agent.Password)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	if tok := agent.Subscribe("#", 1, func(_ paho.Client, m paho.Message) { got <- m.Topic() + " " + string(m.Payload()) }); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	const set = "ecagent/plant/edge1/set/EL2004-1/channel_4.output"
	const dcmd = "spBv1.0/plant/DCMD/edge1/EL2004-1"
	const ncmd = "spBv1.0/plant/NCMD/edge1"
	pub := func(id, topic string, qos byte, retain bool, payload string) (acked bool) {
		t.Helper()
		op, err := connect(t, b, id, a.Operator.Username, a.Operator.Password)
		if err != nil {
			t.Fatal(err)
		}
		defer op.Disconnect(0)
		tok := op.Publish(topic, qos, retain, payload)
		return tok.WaitTimeout(2*time.Second) && tok.Error() == nil && op.IsConnectionOpen()
	}
	if pub("op-set-1", set, 1, true, "true") {
		t.Error("a retained command at QoS 1 was acknowledged, and its connection kept")
	}
	pub("op-set-0", set, 0, true, "true")
	pub("op-dcmd", dcmd, 1, true, "x")
	pub("op-ncmd", ncmd, 0, true, "x")
	want := []string{set, set, dcmd, ncmd}
	for deadline := time.Now().Add(5 * time.Second); len(refused.all()) < len(want); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			break
		}
	}
	if r := refused.all(); !slices.Equal(r, want) {
		t.Errorf("refusals reported %q, want %q", r, want)
	}
	if !pub("op-live", set, 1, false, "false") {
		t.Fatal("a live command was refused")
	}
	if !pub("host", "spBv1.0/STATE/scada", 1, true, "ONLINE") {
		t.Fatal("a host's retained STATE was refused")
	}
	// What the agent got first: the live command and the STATE, none of
	// the retained commands. They came from two connections, so the broker
	// may deliver them in either order.
	want2 := []string{set + " false", "spBv1.0/STATE/scada ONLINE"}
	var first []string
	for range want2 {
		select {
		case m := <-got:
			first = append(first, m)
		case <-time.After(5 * time.Second):
			t.Fatalf("the agent got %q, want %q", first, want2)
		}
	}
	slices.Sort(first)
	if !slices.Equal(first, want2) {
		t.Fatalf("the agent got %q, want %q: a retained command went through", first, want2)
	}
	// Nothing was stored: a new subscription finds the STATE only.
	late, err := connect(t, b, "late", a.Operator.Username, a.Operator.Password)
	if err != nil {
		t.Fatal(err)
	}
	stored := make(chan string, 16)
	late.Subscribe("#", 1, func(_ paho.Client, m paho.Message) { stored <- m.Topic() }).WaitTimeout(5 * time.Second)
	select {
	case m := <-stored:
		if m != "spBv1.0/STATE/scada" {
			t.Fatalf("the broker stored %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the STATE was not stored")
	}
	agent.Publish("ecagent/plant/edge1/marker", 1, false, "m").WaitTimeout(5 * time.Second)
	select {
	case m := <-stored:
		if m != "ecagent/plant/edge1/marker" {
			t.Fatalf("the broker stored %s", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no marker")
	}
}

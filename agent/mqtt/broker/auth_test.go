package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

func testAuth() *Auth {
	return &Auth{
		Agent:          Credential{Username: "ecagent", Password: NewSecret()},
		Operator:       Credential{Username: "operator", Password: NewSecret()},
		CommandFilters: []string{"ecagent/plant/edge1/set/#", "spBv1.0/plant/DCMD/edge1/+"},
	}
}

// connect connects a client to b as user (anonymous when user is empty).
func connect(t *testing.T, b *Broker, id, user, password string) (paho.Client, error) {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID(id).SetAutoReconnect(false).SetConnectRetry(false)
	if user != "" {
		o.SetUsername(user).SetPassword(password)
	}
	c := paho.NewClient(o)
	tok := c.Connect()
	if !tok.WaitTimeout(5 * time.Second) {
		t.Fatalf("%s: no CONNACK within 5 s", id)
	}
	if tok.Error() == nil {
		t.Cleanup(func() { c.Disconnect(0) })
	}
	return c, tok.Error()
}

// TestBrokerRefusesStrangers: with Auth, an anonymous client or one with
// a wrong password is refused at connection (issue 18: any local user
// could publish commands and overwrite the retained status).
func TestBrokerRefusesStrangers(t *testing.T) {
	t.Parallel()
	a := testAuth()
	b, err := StartAuth("127.0.0.1:0", nil, a)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := connect(t, b, "anon", "", ""); err == nil || !strings.Contains(err.Error(), "not Authorized") {
		t.Errorf("anonymous client: %v, want refused as not authorized", err)
	}
	if _, err := connect(t, b, "guess", "operator", a.Operator.Password[:42]+"x"); err == nil {
		t.Error("a wrong password was admitted")
	}
	if _, err := connect(t, b, "agent-as-op", "operator", a.Agent.Password); err == nil {
		t.Error("the agent's password was admitted for the operator")
	}
	if _, err := connect(t, b, "op", "operator", a.Operator.Password); err != nil {
		t.Errorf("operator refused: %v", err)
	}
}

// TestBrokerOperatorPublishesCommandsOnly: an operator's command reaches
// the agent; its publication over the agent's retained status does not.
func TestBrokerOperatorPublishesCommandsOnly(t *testing.T) {
	t.Parallel()
	a := testAuth()
	b, err := StartAuth("127.0.0.1:0", nil, a)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	agent, err := connect(t, b, "agent", a.Agent.Username, a.Agent.Password)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	if tok := agent.Subscribe("#", 1, func(_ paho.Client, m paho.Message) { got <- m.Topic() + " " + string(m.Payload()) }); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	if tok := agent.Publish("ecagent/plant/edge1/status", 1, true, "online"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	// The broker's copy of the agent's own status comes back on its own
	// schedule, after PUBACK: wait for it before the operator starts, so
	// that what arrives next can only be the operator's.
	expect := func(w string) {
		t.Helper()
		select {
		case m := <-got:
			if m != w {
				t.Fatalf("the agent got %q, want %q", m, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("the agent did not get %q", w)
		}
	}
	expect("ecagent/plant/edge1/status online")
	// A QoS 1 publication the operator may not make ends its connection
	// (MQTT 3.1.1 has no refusal in PUBACK); QoS 0 is dropped quietly.
	for i, p := range []struct{ topic, payload string }{
		{"ecagent/plant/edge1/status", "offline"},
		{"ecagent/plant/edge1/pd/EL2004-1", "{}"},
		{"spBv1.0/plant/NDEATH/edge1", "x"},
	} {
		for _, qos := range []byte{0, 1} {
			op, err := connect(t, b, fmt.Sprintf("op%d-%d", i, qos), a.Operator.Username, a.Operator.Password)
			if err != nil {
				t.Fatal(err)
			}
			op.Publish(p.topic, qos, true, p.payload).WaitTimeout(time.Second)
			op.Disconnect(0)
		}
	}
	op, err := connect(t, b, "op", a.Operator.Username, a.Operator.Password)
	if err != nil {
		t.Fatal(err)
	}
	if tok := op.Publish("ecagent/plant/edge1/set/EL2004-1/channel_1.output", 1, false, "true"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("the operator's command: %v", tok.Error())
	}
	expect("ecagent/plant/edge1/set/EL2004-1/channel_1.output true")
	// A late subscriber sees the agent's retained status, not the
	// operator's.
	late, err := connect(t, b, "late", a.Operator.Username, a.Operator.Password)
	if err != nil {
		t.Fatal(err)
	}
	status := make(chan string, 1)
	late.Subscribe("ecagent/plant/edge1/status", 1, func(_ paho.Client, m paho.Message) { status <- string(m.Payload()) })
	select {
	case s := <-status:
		if s != "online" {
			t.Fatalf("retained status %q: the operator overwrote it", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no retained status")
	}
}

// TestLoadOrCreateSecret: created 0600 at first use, the same afterwards;
// a symbolic link, a file others may read or a short one is refused.
func TestLoadOrCreateSecret(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1, created, err := LoadOrCreateSecret(dir, "mqtt-operator.secret")
	if err != nil || !created || len(s1) != 43 {
		t.Fatalf("first: %q %v %v", s1, created, err)
	}
	fi, err := os.Lstat(filepath.Join(dir, "mqtt-operator.secret"))
	if err != nil || fi.Mode().Perm() != 0o600 || !fi.Mode().IsRegular() {
		t.Fatalf("file %v %v", fi.Mode(), err)
	}
	if s2, created, err := LoadOrCreateSecret(dir, "mqtt-operator.secret"); err != nil || created || s2 != s1 {
		t.Fatalf("second: %q %v %v", s2, created, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}

	target := filepath.Join(dir, "elsewhere")
	if err := os.Symlink(target, filepath.Join(dir, "link.secret")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateSecret(dir, "link.secret"); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a planted symbolic link: %v", err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("wrote through a symbolic link")
	}
	if err := os.WriteFile(filepath.Join(dir, "open.secret"), []byte(NewSecret()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateSecret(dir, "open.secret"); err == nil || !strings.Contains(err.Error(), "others may read it") {
		t.Errorf("a world-readable file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "short.secret"), []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateSecret(dir, "short.secret"); err == nil {
		t.Error("a short password was taken")
	}
}

// TestBrokerAnonymousReadOnly: with AnonymousRead an anonymous client may
// watch, but its command never reaches the agent, and a client with a
// user name is never taken for anonymous.
func TestBrokerAnonymousReadOnly(t *testing.T) {
	t.Parallel()
	a := testAuth()
	a.AnonymousRead = true
	b, err := StartAuth("127.0.0.1:0", nil, a)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	agent, err := connect(t, b, "agent", a.Agent.Username, a.Agent.Password)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 16)
	agent.Subscribe("ecagent/#", 1, func(_ paho.Client, m paho.Message) { got <- m.Topic() + " " + string(m.Payload()) }).WaitTimeout(5 * time.Second)
	anon, err := connect(t, b, "anon", "", "")
	if err != nil {
		t.Fatalf("anonymous reader refused: %v", err)
	}
	seen := make(chan string, 16)
	if tok := anon.Subscribe("ecagent/#", 1, func(_ paho.Client, m paho.Message) { seen <- string(m.Payload()) }); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	for _, qos := range []byte{0, 1} {
		w, err := connect(t, b, fmt.Sprintf("anon-writer-%d", qos), "", "")
		if err != nil {
			t.Fatal(err)
		}
		w.Publish("ecagent/plant/edge1/set/EL2004-1/channel_1.output", qos, false, "anonymous").WaitTimeout(time.Second)
	}
	if _, err := connect(t, b, "named", "someone", ""); err == nil {
		t.Error("a user name without a password was admitted")
	}
	agent.Publish("ecagent/plant/edge1/status", 1, true, "online").WaitTimeout(5 * time.Second)
	select {
	case m := <-got:
		if m != "ecagent/plant/edge1/status online" {
			t.Fatalf("the agent got %q: an anonymous command went through", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nothing")
	}
	select {
	case s := <-seen:
		if s != "online" {
			t.Fatalf("the reader saw %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the anonymous reader saw nothing")
	}
}

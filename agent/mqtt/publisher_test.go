package mqtt

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/internal/testsupport/leakcheck"
	"github.com/ecagent/ecagent/shm"
)

// received is one message a test subscriber got.
type received struct {
	topic    string
	payload  []byte
	retained bool
	at       time.Time
}

// subscriber is a paho client collecting every message of its topics.
type subscriber struct {
	c    paho.Client
	mu   sync.Mutex
	msgs []received
	more chan struct{}
}

// subscribe connects a collecting subscriber to filter. persistent keeps
// its session (clean session off, QoS 1) across broker restarts.
func subscribe(t *testing.T, url, id, filter string, persistent bool, opts ...func(*paho.ClientOptions)) *subscriber {
	t.Helper()
	s := &subscriber{more: make(chan struct{}, 1)}
	o := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetCleanSession(!persistent).
		SetAutoReconnect(true).SetMaxReconnectInterval(100 * time.Millisecond).SetConnectRetry(true).
		SetConnectRetryInterval(100 * time.Millisecond).SetOrderMatters(true).SetResumeSubs(true)
	for _, f := range opts {
		f(o)
	}
	handler := func(_ paho.Client, m paho.Message) {
		s.mu.Lock()
		s.msgs = append(s.msgs, received{topic: m.Topic(), payload: append([]byte(nil), m.Payload()...), retained: m.Retained(), at: time.Now()})
		s.mu.Unlock()
		select {
		case s.more <- struct{}{}:
		default:
		}
	}
	o.SetDefaultPublishHandler(handler)
	// A clean session subscribes again on every connection; the first
	// SUBACK is what subscribe waits for. (The handler must not block, so
	// the waiting is done elsewhere.)
	subacked := make(chan error, 1)
	o.SetOnConnectHandler(func(c paho.Client) {
		if !persistent {
			tok := c.Subscribe(filter, 1, handler)
			go func() {
				tok.Wait()
				select {
				case subacked <- tok.Error():
				default:
				}
			}()
		}
	})
	s.c = paho.NewClient(o)
	t.Cleanup(func() { s.c.Disconnect(0) })
	if tok := s.c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("subscriber %s: no connection within 5 s: %v", id, tok.Error())
	}
	if persistent {
		if tok := s.c.Subscribe(filter, 1, handler); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatalf("subscriber %s: no SUBACK for %s within 5 s: %v", id, filter, tok.Error())
		}
		return s
	}
	select {
	case err := <-subacked:
		if err != nil {
			t.Fatalf("subscriber %s: subscribe %s: %v", id, filter, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("subscriber %s: no SUBACK for %s within 5 s", id, filter)
	}
	return s
}

// waitServing waits until p serves its outbox, and so is subscribed to
// its command topics: a publisher announces itself (status, meta),
// subscribes and waits for the SUBACK, and only then sends what it was
// given. events must subscribe to p's events topic. Being connected is
// not enough: the subscription comes after.
func waitServing(t *testing.T, p *Publisher, events *subscriber) {
	t.Helper()
	from := len(events.all())
	const markerCycle = 424242 // a cycle no other event of the tests has
	p.Event(&shm.Event{Kind: shm.EventStateChange, Cycle: markerCycle}, time.Now())
	events.waitFrom(t, from, "/events", 5*time.Second, func(m received) bool {
		return strings.Contains(string(m.payload), fmt.Sprintf(`"cycle":%d`, markerCycle))
	})
}

// waitFor waits until a message on a topic with this suffix satisfies ok,
// and returns it.
func (s *subscriber) waitFor(t *testing.T, suffix string, within time.Duration, ok func(received) bool) received {
	t.Helper()
	return s.waitFrom(t, 0, suffix, within, ok)
}

// waitFrom is waitFor looking only at the messages from index from on.
func (s *subscriber) waitFrom(t *testing.T, from int, suffix string, within time.Duration, ok func(received) bool) received {
	t.Helper()
	deadline := time.After(within)
	seen := from
	for {
		s.mu.Lock()
		for ; seen < len(s.msgs); seen++ {
			if m := s.msgs[seen]; strings.HasSuffix(m.topic, suffix) && (ok == nil || ok(m)) {
				s.mu.Unlock()
				return m
			}
		}
		s.mu.Unlock()
		select {
		case <-s.more:
		case <-deadline:
			t.Fatalf("no message on …%s within %v", suffix, within)
		}
	}
}

func (s *subscriber) all() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

type jsonPD struct {
	TS     int64          `json:"ts"`
	Seq    uint64         `json:"seq"`
	Cycle  uint64         `json:"cycle"`
	Values map[string]any `json:"values"`
}

func newTestPublisher(t *testing.T, cfg Config) (*Publisher, *fakeImage, *fakeRing) {
	t.Helper()
	if cfg.Scheme == 0 {
		cfg.Scheme = SchemeJSON
	}
	if cfg.Root == "" {
		cfg.Root = "ecagent/site/" + t.Name()
	}
	cfg.ClientID = "pub-" + cfg.Root
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	cfg.ReconnectMin, cfg.ReconnectMax = 20*time.Millisecond, 200*time.Millisecond
	if cfg.Buffer == 0 {
		cfg.Buffer = 10000
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	model, problems := NewModel(referenceBus(), cfg.Rules)
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	img := &fakeImage{img: make([]byte, model.ImageBytes)}
	ring := &fakeRing{}
	p.SetBus(model, img, ring)
	p.Start()
	t.Cleanup(func() { _ = p.Close(time.Second) })
	return p, img, ring
}

func TestPublisherJSON(t *testing.T) {
	leakcheck.Check(t)
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/edge"
	sub := subscribe(t, broker.URL(), "sub", root+"/#", false)
	p, img, _ := newTestPublisher(t, Config{Broker: broker.URL(), QoS: 1, Root: root,
		Rules: Rules{Interval: 20 * time.Millisecond}})

	if m := sub.waitFor(t, "/status", 5*time.Second, nil); string(m.payload) != "online" {
		t.Errorf("status %q", m.payload)
	}
	var meta metaPayload
	m := sub.waitFor(t, "/meta/EL1014-3", 5*time.Second, nil)
	if err := json.Unmarshal(m.payload, &meta); err != nil || len(meta.Signals) != 4 || meta.Signals[0].Direction != "input" {
		t.Errorf("meta %s: %v", m.payload, err)
	}
	sub.waitFor(t, "/pd/EL1014-3", 5*time.Second, nil)
	// A changed input shows up within one publish period (plus delivery).
	img.set(5, 0b0000_0001)
	changed := time.Now()
	m = sub.waitFor(t, "/pd/EL1014-3", 5*time.Second, func(r received) bool {
		var pd jsonPD
		return json.Unmarshal(r.payload, &pd) == nil && pd.Values["channel_1.input"] == true
	})
	if d := m.at.Sub(changed); d > 20*time.Millisecond+200*time.Millisecond {
		t.Errorf("the change took %v to arrive", d)
	}
	for _, r := range sub.all() {
		if strings.Contains(r.topic, "/pd/EK11") {
			t.Errorf("a coupler without process data published %s", r.topic)
		}
	}

	r := cyclestats.Report{Target: 1e6, Counts: cycles(10)}
	r.Windows[cyclestats.QuantityJitter] = stats.Summary{Count: 9, Max: 5000}
	p.Window(&r, time.Now())
	m = sub.waitFor(t, "/stats", 5*time.Second, nil)
	if !strings.Contains(string(m.payload), `"cycles":10`) || !strings.Contains(string(m.payload), `"max":5000`) {
		t.Errorf("stats %s", m.payload)
	}
	ev := shm.Event{Kind: shm.EventStateChange, Cycle: 99, ALState: 0x0012, ALStatusCode: 0x001B}
	ev.SetText("bus")
	p.Event(&ev, time.Now())
	m = sub.waitFor(t, "/events", 5*time.Second, func(r received) bool { return strings.Contains(string(r.payload), "state-change") })
	var event map[string]any
	if err := json.Unmarshal(m.payload, &event); err != nil || event["state"] != "PREOP" || event["error"] != true ||
		event["al_status_code"] != 27.0 || event["cycle"] != 99.0 || event["al_status"] == "" {
		t.Errorf("event %s", m.payload)
	}
	emcy := shm.Event{Kind: shm.EventEmergency, Cycle: 100, Slave: 5, Value: shm.EmergencyValue(0x8611, 0x81, [5]byte{1, 2, 3, 4, 5})}
	p.Event(&emcy, time.Now())
	m = sub.waitFor(t, "/events", 5*time.Second, func(r received) bool { return strings.Contains(string(r.payload), `"kind":"emergency"`) })
	if want := `"kind":"emergency","cycle":100,"slave":5,"slave_name":"EL4132-5","error_code":34321,"error_register":129,"data":"0102030405","meaning":"following error"}`; !strings.HasSuffix(string(m.payload), want) {
		t.Errorf("emergency event %s, want it to end in %s", m.payload, want)
	}

	if err := p.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	// The retained status says offline after a graceful stop.
	late := subscribe(t, broker.URL(), "late", root+"/status", false)
	if m := late.waitFor(t, "/status", 5*time.Second, nil); string(m.payload) != "offline" || !m.retained {
		t.Errorf("status after Close: %q retained %v", m.payload, m.retained)
	}
	s := p.Stats()
	if s.Published == 0 || s.Delivered != s.Published || s.Dropped != 0 || s.Buffered != 0 {
		t.Errorf("stats after a clean run: %+v", s)
	}
}

func TestPublisherWrites(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/w"
	sub := subscribe(t, broker.URL(), "sub", root+"/events", false)
	rules := mustRules(t, nil, nil, []string{"EL2004-1/*", "EL4132-5/ao_output_channel_1.analog_output -5..5", "EL4132-5/drive-fault-reset"})
	rules.Interval = time.Second
	// Each refusal is answered in full here (the burst covers them all).
	p, _, ring := newTestPublisher(t, Config{Broker: broker.URL(), QoS: 1, Root: root, Rules: rules, WritesEnabled: true, RefusalBurst: 100})
	cmd := subscribe(t, broker.URL(), "cmd", "nothing/here", false)
	set := func(target, payload string) {
		t.Helper()
		if tok := cmd.c.Publish(root+"/set/"+target, 1, false, payload); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatal(tok.Error())
		}
	}
	waitServing(t, p, sub) // subscribed to the set topics
	rejects := []struct {
		target, payload string
		code            RejectCode
	}{
		{"EL4132-5/ao_output_channel_1.analog_output", "7.5", RejectOutOfRange},
		{"EL4132-5/ao_output_channel_2.analog_output", "1", RejectNotWritable},
		{"EL1014-3/channel_1.input", "true", RejectNotWritable},
		{"EL2004-1/nope", "true", RejectUnknown},
		{"EL9999-9/x", "true", RejectUnknown},
		{"EL2004-1/channel_2.output", `"on"`, RejectWrongType},
		{"EL2004-1/channel_2.output", `{"value":`, RejectMalformed},
		{"EL2004-1/too/deep", "true", RejectUnknown},
		{"EL2004-1/drive-fault-reset", "true", RejectNotWritable}, // "*" does not allow it
	}
	for _, r := range rejects {
		from := len(sub.all())
		set(r.target, r.payload)
		m := sub.waitFrom(t, from, "/events", 5*time.Second, func(m received) bool {
			return strings.Contains(string(m.payload), root+"/set/"+r.target+`"`)
		})
		var ev map[string]any
		if err := json.Unmarshal(m.payload, &ev); err != nil || ev["kind"] != "command-rejected" || ev["code"] != string(r.code) || ev["reason"] == "" {
			t.Errorf("%s %s: event %s", r.target, r.payload, m.payload)
		}
	}
	if got := ring.all(); len(got) != 0 {
		t.Fatalf("rejected writes reached the ring: %+v", got)
	}
	set("EL2004-1/channel_3.output", "true")
	set("EL4132-5/ao_output_channel_1.analog_output", `{"value": -2.5}`)
	set("EL4132-5/drive-fault-reset", "true")
	deadline := time.Now().Add(5 * time.Second)
	for len(ring.all()) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polls, with a deadline: the comparison below says what arrived
	}
	got := ring.all()
	minus := int16(-8192) // -2.5 V at 10 V / 0x7FFF per step
	want := []shm.Command{
		{Seq: 1, Value: 1, BitOffset: 2, Kind: shm.CommandSetOutputs, Slave: 1, BitLen: 1},
		{Seq: 2, Value: uint64(uint16(minus)), BitOffset: 0, Kind: shm.CommandSetOutputs, Slave: 5, BitLen: 16},
		{Seq: 3, Kind: shm.CommandResetDriveFault, Slave: 5},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("commands:\n got %+v\nwant %+v", got, want)
	}
	// The cycle's answers become events.
	p.Event(&shm.Event{Kind: shm.EventCommandDone, Value: 1, Slave: 1, Cycle: 7}, time.Now())
	refused := shm.Event{Kind: shm.EventCommandRejected, Value: 2, Slave: 5}
	refused.SetText("bits outside the slave's outputs")
	p.Event(&refused, time.Now())
	sub.waitFor(t, "/events", 5*time.Second, func(m received) bool {
		return strings.Contains(string(m.payload), `"kind":"command-done"`) && strings.Contains(string(m.payload), `"signal":"channel_3.output"`)
	})
	sub.waitFor(t, "/events", 5*time.Second, func(m received) bool {
		return strings.Contains(string(m.payload), `"code":"cycle_refused"`) && strings.Contains(string(m.payload), "bits outside")
	})
	s := p.Stats()
	if s.Accepted != 3 || s.Rejected[RejectCycleRefused] != 1 || s.Rejected[RejectUnknown] != 3 || s.Rejected[RejectNotWritable] != 3 {
		t.Errorf("write counters: %+v", s)
	}
}

func TestPublisherWritesDisabled(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/off"
	sub := subscribe(t, broker.URL(), "sub", root+"/events", false)
	rules := mustRules(t, nil, nil, []string{"EL2004-1/*"})
	rules.Interval = time.Second
	p, _, ring := newTestPublisher(t, Config{Broker: broker.URL(), QoS: 1, Root: root, Rules: rules})
	waitServing(t, p, sub) // subscribed to the set topics
	cmd := subscribe(t, broker.URL(), "cmd", "nothing/here", false)
	if tok := cmd.c.Publish(root+"/set/EL2004-1/channel_1.output", 1, false, "true"); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publish the write: no PUBACK within 5 s: %v", tok.Error())
	}
	m := sub.waitFor(t, "/events", 5*time.Second, func(m received) bool { return strings.Contains(string(m.payload), "command-rejected") })
	if !strings.Contains(string(m.payload), `"code":"disabled"`) {
		t.Errorf("event %s", m.payload)
	}
	if len(ring.all()) != 0 || p.Stats().Rejected[RejectDisabled] != 1 {
		t.Errorf("a write went through while writes are off")
	}
}

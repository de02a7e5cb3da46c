package mqtt

import (
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// spMessage is a received Sparkplug message, decoded by the protobuf
// runtime.
type spMessage struct {
	topic sparkplug.Topic
	p     mqtttest.SparkplugPayload
}

func decodeAll(t *testing.T, msgs []received) []spMessage {
	t.Helper()
	var out []spMessage
	for _, m := range msgs {
		topic, ok := sparkplug.ParseTopic(m.topic)
		if !ok {
			continue
		}
		p, err := mqtttest.DecodeSparkplug(m.payload)
		if err != nil {
			t.Fatalf("%s: %v", m.topic, err)
		}
		out = append(out, spMessage{topic, p})
	}
	return out
}

func metricNamed(p mqtttest.SparkplugPayload, name string) (mqtttest.SparkplugMetric, bool) {
	for _, m := range p.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return mqtttest.SparkplugMetric{}, false
}

// checkSparkplugOrder checks the rules a Sparkplug host relies on: NBIRTH
// first with seq 0, each DBIRTH before that device's DDATA, seq counting
// up by one (mod 256) from each NBIRTH, DDATA metrics by alias only, with
// aliases from the device's birth. It returns how often seq wrapped.
func checkSparkplugOrder(t *testing.T, ms []spMessage) (wraps int) {
	t.Helper()
	if len(ms) == 0 || ms[0].topic.Type != sparkplug.NBIRTH {
		t.Fatalf("the first message is not an NBIRTH: %+v", ms[:min(len(ms), 1)])
	}
	var seq uint64
	aliases := map[string]map[uint64]bool{}
	for i, m := range ms {
		if m.topic.Type == sparkplug.NCMD || m.topic.Type == sparkplug.DCMD || m.topic.Type == sparkplug.NDEATH {
			continue
		}
		if !m.p.HasSeq {
			t.Fatalf("message %d (%s) has no seq", i, m.topic.Type)
		}
		switch {
		case m.topic.Type == sparkplug.NBIRTH:
			if m.p.Seq != 0 {
				t.Errorf("NBIRTH with seq %d", m.p.Seq)
			}
		case m.p.Seq != (seq+1)%256:
			t.Fatalf("message %d (%s %s): seq %d after %d", i, m.topic.Type, m.topic.Device, m.p.Seq, seq)
		case m.p.Seq == 0:
			wraps++
		}
		seq = m.p.Seq
		switch m.topic.Type {
		case sparkplug.DBIRTH:
			aliases[m.topic.Device] = map[uint64]bool{}
			for _, x := range m.p.Metrics {
				if !x.HasName || !x.HasAlias || x.Value == nil && !x.Null {
					t.Errorf("DBIRTH %s: metric %+v lacks name, alias or value", m.topic.Device, x)
				}
				aliases[m.topic.Device][x.Alias] = true
			}
		case sparkplug.DDATA:
			known := aliases[m.topic.Device]
			if known == nil {
				t.Fatalf("DDATA of %s before its DBIRTH", m.topic.Device)
			}
			for _, x := range m.p.Metrics {
				if x.HasName || !known[x.Alias] {
					t.Errorf("DDATA %s: metric %+v has a name or an alias unknown from the birth", m.topic.Device, x)
				}
			}
		}
	}
	return wraps
}

func TestPublisherSparkplug(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	sub := subscribe(t, broker.URL(), "host", "spBv1.0/plant/#", false)
	events := subscribe(t, broker.URL(), "events", "ecagent/sp/edge1/events", false)
	rules := mustRules(t, nil, nil, []string{"EL2004-1/*", "EL4132-5/ao_output_channel_1.analog_output -5..5"})
	rules.Interval = 5 * time.Millisecond
	p, img, ring := newTestPublisher(t, Config{Broker: broker.URL(), Scheme: SchemeSparkplug, Group: "plant", Node: "edge1",
		Root: "ecagent/sp/edge1", Rules: rules, WritesEnabled: true})

	nbirth := sub.waitFor(t, "/NBIRTH/edge1", 5*time.Second, nil)
	// 6 devices at 200 Hz: seq wraps about five times a second. Twice
	// before the change below (and the rebirth, which starts seq again):
	// the message after the NBIRTH (seq 0) and 2×256 more.
	sub.waitFrom(t, 2*256+1, "", 20*time.Second, nil)
	img.set(5, 0b0000_0010)
	sub.waitFor(t, "/DDATA/edge1/EL1014-3", 5*time.Second, func(r received) bool {
		p, err := mqtttest.DecodeSparkplug(r.payload)
		return err == nil && len(p.Metrics) == 4 && p.Metrics[1].Value == true
	})
	birth, err := mqtttest.DecodeSparkplug(nbirth.payload)
	if err != nil {
		t.Fatal(err)
	}
	bd, ok := metricNamed(birth, sparkplug.MetricBdSeq)
	if !ok || bd.Value != uint64(1) || bd.DataType != uint32(sparkplug.UInt64) {
		t.Errorf("NBIRTH bdSeq: %+v", bd)
	}
	if rb, ok := metricNamed(birth, sparkplug.MetricRebirth); !ok || rb.Value != false {
		t.Errorf("NBIRTH lacks the rebirth control: %+v", rb)
	}

	// Rebirth on request.
	host := sub.c
	cmd := sparkplug.AppendPayload(nil, &sparkplug.Payload{Metrics: []sparkplug.Metric{{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true}}})
	host.Publish(sparkplug.NodeTopic("plant", sparkplug.NCMD, "edge1"), 0, false, cmd).WaitTimeout(5 * time.Second)
	from := len(sub.all())
	sub.waitFrom(t, from, "/NBIRTH/edge1", 5*time.Second, nil)
	sub.waitFrom(t, from, "/DBIRTH/edge1/EL3204-7", 5*time.Second, nil)

	// Writes as DCMD, by name and by alias; a refusal goes to the events.
	model := p.sampler.model
	alias := model.Device("EL4132-5").Signal("ao_output_channel_1.analog_output").Alias
	dcmd := func(device string, m sparkplug.Metric) {
		b := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(time.Now().UnixMilli()), Metrics: []sparkplug.Metric{m}})
		host.Publish(sparkplug.DeviceTopic("plant", sparkplug.DCMD, "edge1", device), 0, false, b).WaitTimeout(5 * time.Second)
	}
	dcmd("EL2004-1", sparkplug.Metric{Name: "channel_4.output", DataType: sparkplug.Boolean, Bool: true})
	dcmd("EL4132-5", sparkplug.Metric{HasAlias: true, Alias: alias, DataType: sparkplug.Double, Float: 1.0})
	dcmd("EL4132-5", sparkplug.Metric{HasAlias: true, Alias: alias, DataType: sparkplug.Double, Float: 9})
	events.waitFor(t, "/events", 5*time.Second, func(r received) bool {
		return strings.Contains(string(r.payload), `"code":"out_of_range"`)
	})
	cmds := ring.all()
	if len(cmds) != 2 || cmds[0].Slave != 1 || cmds[0].BitOffset != 3 || cmds[0].Value != 1 ||
		cmds[1].Slave != 5 || cmds[1].Value != 3277 {
		t.Errorf("commands from DCMD: %+v", cmds)
	}

	if err := p.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	death := sub.waitFor(t, "/NDEATH/edge1", 5*time.Second, nil)
	dp, err := mqtttest.DecodeSparkplug(death.payload)
	if err != nil {
		t.Fatal(err)
	}
	if bd, ok := metricNamed(dp, sparkplug.MetricBdSeq); !ok || bd.Value != uint64(1) {
		t.Errorf("NDEATH bdSeq %+v, want the NBIRTH's 1", bd)
	}
	ms := decodeAll(t, sub.all())
	if wraps := checkSparkplugOrder(t, ms); wraps < 2 {
		t.Errorf("seq wrapped %d times in %d messages", wraps, len(ms))
	}
}

// TestSparkplugStoreAndForward: after an outage, a new NBIRTH (bdSeq one
// up) and the DBIRTHs come first, then the data produced while offline,
// marked historical.
func TestSparkplugStoreAndForward(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	// The host's session outlives the broker restart, so that it misses
	// nothing the agent sends while it reconnects itself.
	sub := subscribe(t, broker.URL(), "host", "spBv1.0/g/#", true)
	rules := Rules{Interval: 20 * time.Millisecond}
	p, _, _ := newTestPublisher(t, Config{Broker: broker.URL(), Scheme: SchemeSparkplug, Group: "g", Node: "n",
		Root: "ecagent/sf/n", Rules: rules})
	if !waitConnected(p, 5*time.Second) {
		t.Fatal("not connected")
	}
	sub.waitFor(t, "/DDATA/n/EL2004-1", 5*time.Second, nil)
	broker.Stop()
	// The outage lasts until the publisher noticed it and buffered twice
	// the historical DDATA asserted below (what it stores is what the
	// test is about, not how long that takes on this host).
	const stored = 2 * 6 * 10
	for deadline := time.Now().Add(10 * time.Second); p.Stats().Connected || p.Stats().Buffered < stored; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("10 s into the outage: %+v, want disconnected with %d buffered", p.Stats(), stored)
		}
	}
	from := len(sub.all())
	broker.Start()
	sub.waitFrom(t, from, "/NBIRTH/n", 10*time.Second, nil)
	sub.waitFrom(t, from, "/DDATA/n/EL2004-1", 5*time.Second, func(r received) bool {
		p, _ := mqtttest.DecodeSparkplug(r.payload)
		return len(p.Metrics) > 0 && !p.Metrics[0].Historical
	})
	ms := decodeAll(t, sub.all()[from:])
	// The broker may deliver the will of the broken connection first.
	for len(ms) > 0 && ms[0].topic.Type == sparkplug.NDEATH {
		if bd, _ := metricNamed(ms[0].p, sparkplug.MetricBdSeq); bd.Value != uint64(1) {
			t.Errorf("NDEATH of the first connection with bdSeq %v, want 1", bd.Value)
		}
		ms = ms[1:]
	}
	checkSparkplugOrder(t, ms)
	// bdSeq counts every CONNECT, the failed ones during the outage too.
	bd, _ := metricNamed(ms[0].p, sparkplug.MetricBdSeq)
	if v, ok := bd.Value.(uint64); !ok || v < 2 {
		t.Errorf("bdSeq after a reconnect: %v, want more than the first connection's 1", bd.Value)
	}
	historical := 0
	for _, m := range ms {
		if m.topic.Type == sparkplug.DDATA && len(m.p.Metrics) > 0 && m.p.Metrics[0].Historical {
			historical++
			if m.p.Metrics[0].Timestamp == 0 {
				t.Errorf("a historical metric without its timestamp")
			}
		}
	}
	if historical < 6*10 {
		t.Errorf("%d historical DDATA after an outage of %d buffered messages at 50 Hz for 6 devices", historical, stored)
	}
}

// TestSparkplugDataMadeBeforeTheBirthIsHistorical sends two node data
// messages on a live connection: one made before the connection's births
// (as one made while a broken connection was not yet noticed, or sent on
// it and not acknowledged, is) arrives marked historical — sent as
// current after the births, its older values would replace theirs at the
// host — and one made after them arrives as current.
func TestSparkplugDataMadeBeforeTheBirthIsHistorical(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	sub := subscribe(t, broker.URL(), "host", "spBv1.0/g/#", false)
	p, _, _ := newTestPublisher(t, Config{Broker: broker.URL(), Scheme: SchemeSparkplug, Group: "g", Node: "n",
		Root: "ecagent/hist/n", Rules: Rules{Interval: time.Hour}})
	if !waitConnected(p, 5*time.Second) {
		t.Fatal("not connected")
	}
	sub.waitFor(t, "/DBIRTH/n/EL2004-1", 5*time.Second, nil)
	probe := func(name string, made time.Time) {
		pl := sparkplug.Payload{Timestamp: uint64(made.UnixMilli()),
			Metrics: []sparkplug.Metric{{Name: name, DataType: sparkplug.Boolean, Bool: true}}}
		p.out.push(message{topic: "spBv1.0/g/NDATA/n", payload: sparkplug.AppendPayload(nil, &pl), sparkplug: true,
			made: made.UnixNano()})
	}
	probe("probe/before", time.Now().Add(-time.Hour))
	probe("probe/after", time.Now())
	for _, c := range []struct {
		name       string
		historical bool
	}{{"probe/before", true}, {"probe/after", false}} {
		r := sub.waitFor(t, "/NDATA/n", 5*time.Second, func(r received) bool {
			pl, _ := mqtttest.DecodeSparkplug(r.payload)
			_, ok := metricNamed(pl, c.name)
			return ok
		})
		pl, _ := mqtttest.DecodeSparkplug(r.payload)
		if m, _ := metricNamed(pl, c.name); m.Historical != c.historical {
			t.Errorf("%s: historical %v, want %v", c.name, m.Historical, c.historical)
		}
	}
}

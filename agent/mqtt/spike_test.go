package mqtt

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/contract"
)

// TestJSONCycleSpike: an explained late cycle is a cycle-spike event on
// …/events with the culprits, largest first, as contract.SpikeView says.
func TestJSONCycleSpike(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/spike/json"
	sub := subscribe(t, broker.URL(), "sub", root+"/#", false)
	p, err := New(Config{Broker: broker.URL(), ClientID: "spikejson", Scheme: SchemeJSON, QoS: 1, Root: root,
		Rules: Rules{Interval: 10 * time.Millisecond}, Buffer: 10000, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.SetBusModel(busstate.New(nil))
	p.Start()
	t.Cleanup(func() { _ = p.Close(time.Second) })
	sub.waitFor(t, "/status", 5*time.Second, nil)

	sp := contract.CycleSpike{Cycle: 1047, Deadline: 5_000_000, Wake: 7_568_000, End: 7_600_000,
		Late: 2568 * time.Microsecond, Excess: 2563 * time.Microsecond, Causes: []contract.SpikeCause{
			{Class: contract.SpikeTask, Name: "ecspikehog/23025 FIFO 90", PID: 23025, Time: 2466 * time.Microsecond, Share: 0.962},
			{Class: contract.SpikeIRQ, Name: "local_timer", Time: 97 * time.Microsecond, Share: 0.038}}}
	p.CycleSpike(&sp, time.Now())
	ev := sub.waitFor(t, "/events", 5*time.Second, func(r received) bool { return strings.Contains(string(r.payload), "cycle-spike") })
	var got struct {
		Kind     string                    `json:"kind"`
		Cycle    uint64                    `json:"cycle"`
		Cause    string                    `json:"cause"`
		LateUS   float64                   `json:"late_us"`
		ExcessUS float64                   `json:"excess_us"`
		Causes   []contract.SpikeCauseView `json:"causes"`
	}
	if err := json.Unmarshal(ev.payload, &got); err != nil {
		t.Fatalf("event %s: %v", ev.payload, err)
	}
	if got.Kind != "cycle-spike" || got.Cycle != 1047 || got.Cause != "task" || got.LateUS != 2568 || got.ExcessUS != 2563 ||
		len(got.Causes) != 2 || got.Causes[0].Name != "ecspikehog/23025 FIFO 90" || got.Causes[0].PID != 23025 ||
		got.Causes[0].Share != 0.962 || got.Causes[1].Class != "irq" {
		t.Errorf("event %s", ev.payload)
	}
}

// testSpike is a spike blamed on a FIFO hog, with an interrupt after it.
func testSpike(cycle uint64) contract.CycleSpike {
	return contract.CycleSpike{Cycle: cycle, Deadline: 5_000_000, Wake: 7_568_000, End: 7_600_000,
		Late: 2568 * time.Microsecond, Excess: 2563 * time.Microsecond, Steal: 12 * time.Microsecond, Causes: []contract.SpikeCause{
			{Class: contract.SpikeTask, Name: "ecspikehog/23025 FIFO 90", PID: 23025, Time: 2466 * time.Microsecond, Share: 0.962},
			{Class: contract.SpikeIRQ, Name: "local_timer", Time: 97 * time.Microsecond, Share: 0.038}}}
}

// spikeMetricTypes are the spike metrics a Sparkplug host is promised
// (docs/mqtt.md), with their datatypes: written out here, not taken from
// the code, so that a change of either shows.
var spikeMetricTypes = map[string]sparkplug.DataType{
	"Spikes/Count":           sparkplug.UInt64,
	"Spikes/Last/cycle":      sparkplug.UInt64,
	"Spikes/Last/cause":      sparkplug.String,
	"Spikes/Last/culprit":    sparkplug.String,
	"Spikes/Last/late_us":    sparkplug.Double,
	"Spikes/Last/excess_us":  sparkplug.Double,
	"Spikes/Last/overrun":    sparkplug.Boolean,
	"Spikes/Last/steal_us":   sparkplug.Double,
	"Spikes/Last/incomplete": sparkplug.Boolean,
	"Spikes/Last/causes":     sparkplug.String,
}

// spikeBirth returns the spike metrics an NBIRTH declares, by name, and
// the names by alias; it fails t unless every one of spikeMetricTypes is
// declared once, with name, alias, datatype and timestamp, and no alias
// is declared twice in the NBIRTH.
func spikeBirth(t *testing.T, payload []byte) (map[string]mqtttest.SparkplugMetric, map[uint64]string) {
	t.Helper()
	p, err := mqtttest.DecodeSparkplug(payload)
	if err != nil {
		t.Fatal(err)
	}
	byName, byAlias := map[string]mqtttest.SparkplugMetric{}, map[uint64]string{}
	for _, m := range p.Metrics {
		if !m.HasAlias {
			t.Errorf("NBIRTH metric %q without alias", m.Name)
		}
		if prev, ok := byAlias[m.Alias]; ok {
			t.Errorf("NBIRTH alias %d of %q and %q", m.Alias, prev, m.Name)
		}
		byAlias[m.Alias] = m.Name
		if strings.HasPrefix(m.Name, "Spikes/") {
			byName[m.Name] = m
		}
	}
	for name, typ := range spikeMetricTypes {
		m, ok := byName[name]
		switch {
		case !ok:
			t.Errorf("NBIRTH does not declare %s", name)
		case m.DataType != uint32(typ):
			t.Errorf("NBIRTH declares %s as %v, want %v", name, sparkplug.DataType(m.DataType), typ)
		case m.Timestamp == 0:
			t.Errorf("NBIRTH %s without timestamp", name)
		}
	}
	if len(byName) != len(spikeMetricTypes) {
		t.Errorf("NBIRTH declares %d spike metrics, want %d: %v", len(byName), len(spikeMetricTypes), byName)
	}
	return byName, byAlias
}

// TestSparkplugSpikeMetrics: NBIRTH declares the Spikes/… node metrics,
// the last spike's fields null before the first spike (never zeros that
// read as a spike) and Spikes/Count 0; each cycle-spike event is one
// NDATA (beside the JSON event, never more) carrying them by alias, with
// the datatypes of the birth, at the spike's time, rendered from the same
// spike as the JSON event; a rebirth declares the last spike's values.
func TestSparkplugSpikeMetrics(t *testing.T) {
	p := idlePublisher(t, SchemeSparkplug)
	birth := p.r.Announce(nil, nil, 3)
	declared, names := spikeBirth(t, birth[0].Payload)
	for name, m := range declared {
		switch {
		case name == "Spikes/Count" && (m.Null || m.Value != uint64(0)):
			t.Errorf("NBIRTH before any spike: %s = %+v, want 0", name, m)
		case name != "Spikes/Count" && (!m.Null || m.Value != nil):
			t.Errorf("NBIRTH before any spike: %s = %+v, want null", name, m)
		}
	}

	const spikes = 10
	at := time.UnixMilli(1_700_000_000_123)
	var last []byte
	for i := range spikes {
		sp := testSpike(uint64(1047 + i))
		p.CycleSpike(&sp, at.Add(time.Duration(i)*100*time.Millisecond))
		ms := p.out.drain()
		if len(ms) != 2 || !strings.HasSuffix(ms[0].topic, "/events") || ms[1].topic != "spBv1.0/g/NDATA/n" {
			t.Fatalf("spike %d: messages %s, want the event and one NDATA", i, topics(ms))
		}
		if i < spikes-1 {
			continue
		}
		var ev struct {
			Causes json.RawMessage `json:"causes"`
		}
		if err := json.Unmarshal(ms[0].payload, &ev); err != nil {
			t.Fatal(err)
		}
		nd, err := mqtttest.DecodeSparkplug(ms[1].payload)
		if err != nil {
			t.Fatal(err)
		}
		ts := uint64(at.Add((spikes - 1) * 100 * time.Millisecond).UnixMilli())
		if nd.Timestamp != ts || len(nd.Metrics) != len(spikeMetricTypes) {
			t.Fatalf("NDATA timestamp %d (want %d), %d metrics (want %d)", nd.Timestamp, ts, len(nd.Metrics), len(spikeMetricTypes))
		}
		want := map[string]any{"Spikes/Count": uint64(spikes), "Spikes/Last/cycle": uint64(1047 + spikes - 1),
			"Spikes/Last/cause": "task", "Spikes/Last/culprit": "ecspikehog/23025 FIFO 90", "Spikes/Last/late_us": 2568.0,
			"Spikes/Last/excess_us": 2563.0, "Spikes/Last/overrun": false, "Spikes/Last/steal_us": 12.0,
			"Spikes/Last/incomplete": false, "Spikes/Last/causes": string(ev.Causes)}
		for _, m := range nd.Metrics {
			name := names[m.Alias]
			switch {
			case m.HasName || !m.HasAlias || name == "":
				t.Errorf("NDATA metric %+v: want an alias of the NBIRTH only", m)
			case m.DataType != declared[name].DataType:
				t.Errorf("NDATA %s: datatype %d, NBIRTH declared %d", name, m.DataType, declared[name].DataType)
			case m.Null || m.Value != want[name]:
				t.Errorf("NDATA %s = %#v (null %v), want %#v", name, m.Value, m.Null, want[name])
			case m.Timestamp != ts:
				t.Errorf("NDATA %s timestamp %d, want the spike's %d", name, m.Timestamp, ts)
			case !m.Historical:
				t.Errorf("NDATA %s made offline is not historical", name)
			}
		}
		last = ms[1].payload
	}

	// A rebirth declares the last spike's values, at its time.
	reborn, _ := spikeBirth(t, p.r.Announce(nil, nil, 3)[0].Payload)
	nd, _ := mqtttest.DecodeSparkplug(last)
	for _, m := range nd.Metrics {
		name := names[m.Alias]
		if b := reborn[name]; b.Null || b.Value != m.Value || b.Timestamp != m.Timestamp {
			t.Errorf("rebirth: %s = %#v at %d (null %v), the last NDATA had %#v at %d", name, b.Value, b.Timestamp, b.Null, m.Value, m.Timestamp)
		}
	}
}

// TestJSONCycleSpikeFields pins the cycle-spike event byte for byte: the
// fields of spikeFields that the JSON event carries, in their order,
// steal_us and incomplete left out when zero.
func TestJSONCycleSpikeFields(t *testing.T) {
	for _, c := range []struct {
		spike func(*contract.CycleSpike)
		want  string
	}{
		{func(*contract.CycleSpike) {}, `{"ts":1700000000123,"seq":2,"kind":"cycle-spike","cycle":1047,"cause":"task","late_us":2568,"excess_us":2563,"overrun":false,"steal_us":12,` +
			`"causes":[{"class":"task","name":"ecspikehog/23025 FIFO 90","pid":23025,"time_us":2466,"share":0.962},{"class":"irq","name":"local_timer","time_us":97,"share":0.038}]}`},
		{func(sp *contract.CycleSpike) { sp.Steal, sp.Incomplete, sp.Overrun, sp.Causes = 0, true, true, nil },
			`{"ts":1700000000123,"seq":2,"kind":"cycle-spike","cycle":1047,"cause":"unknown","late_us":2568,"excess_us":2563,"overrun":true,"incomplete":true,"causes":[]}`},
	} {
		p := idlePublisher(t, SchemeJSON)
		sp := testSpike(1047)
		c.spike(&sp)
		p.CycleSpike(&sp, time.UnixMilli(1_700_000_000_123))
		ms := p.out.drain()
		if len(ms) != 1 || string(ms[0].payload) != c.want {
			t.Errorf("event %s\nwant  %s", ms[0].payload, c.want)
		}
	}
}

// TestSparkplugSpikeTahu: Eclipse Tahu's own decoder (sparkplug-payload)
// reads what a Sparkplug host gets of a spike through a broker: the
// NBIRTH's Spikes/… metrics null (no value field) but Spikes/Count 0,
// the spike's NDATA in the same seq stream with the datatypes of the
// birth and the spike's values, live (not historical), and the rebirth's
// NBIRTH with those values.
func TestSparkplugSpikeTahu(t *testing.T) {
	tahu := mqtttest.NeedTahu(t)
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	host := subscribe(t, broker.URL(), "tahu-host", "spBv1.0/#", false)
	p, err := New(Config{Broker: broker.URL(), ClientID: "spiketahu", Scheme: SchemeSparkplug, Group: "plant", Node: "edge9",
		Root: "ecagent/spike/sp", Rules: Rules{Interval: 10 * time.Millisecond}, Buffer: 10000, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.SetBusModel(busstate.New(nil))
	p.Start()
	t.Cleanup(func() { _ = p.Close(time.Second) })
	decode := func(r received) mqtttest.TahuPayload {
		t.Helper()
		d, err := tahu.Decode(r.payload)
		if err != nil {
			t.Fatalf("%s: %v", r.topic, err)
		}
		return d
	}
	birth := decode(host.waitFor(t, "/NBIRTH/edge9", 5*time.Second, nil))
	tahuType := func(name string) string { return spikeMetricTypes[name].String() }
	names := map[uint64]string{}
	for _, m := range birth.Metrics {
		if m.Name == nil || !strings.HasPrefix(*m.Name, "Spikes/") {
			continue
		}
		names[*m.Alias] = *m.Name
		want := any(nil)
		if *m.Name == "Spikes/Count" {
			want = uint64(0)
		}
		if m.Type != tahuType(*m.Name) || m.Value != want || (want == nil) != (m.ValueField == "") {
			t.Errorf("Tahu reads NBIRTH %s as %s %#v (field %q), want %s %#v", *m.Name, m.Type, m.Value, m.ValueField, tahuType(*m.Name), want)
		}
	}
	if len(names) != len(spikeMetricTypes) {
		t.Fatalf("Tahu finds %d spike metrics in NBIRTH, want %d", len(names), len(spikeMetricTypes))
	}

	at := time.Now().Truncate(time.Millisecond)
	sp := testSpike(1047)
	p.CycleSpike(&sp, at)
	isSpike := func(r received) bool {
		d, err := mqtttest.DecodeSparkplug(r.payload)
		return err == nil && len(d.Metrics) > 0 && names[d.Metrics[0].Alias] != ""
	}
	data := decode(host.waitFor(t, "/NDATA/edge9", 5*time.Second, isSpike))
	want := map[string]any{"Spikes/Count": uint64(1), "Spikes/Last/cycle": uint64(1047), "Spikes/Last/cause": "task",
		"Spikes/Last/culprit": "ecspikehog/23025 FIFO 90", "Spikes/Last/late_us": 2568.0, "Spikes/Last/excess_us": 2563.0,
		"Spikes/Last/overrun": false, "Spikes/Last/steal_us": 12.0, "Spikes/Last/incomplete": false}
	if data.Timestamp == nil || *data.Timestamp != uint64(at.UnixMilli()) || len(data.Metrics) != len(spikeMetricTypes) {
		t.Fatalf("Tahu reads the spike's NDATA as %+v", data)
	}
	values := map[string]any{}
	for _, m := range data.Metrics {
		name := names[*m.Alias]
		values[name] = m.Value
		if w, ok := want[name]; (ok && m.Value != w) || m.Type != tahuType(name) || m.Name != nil ||
			(m.IsHistorical != nil && *m.IsHistorical) || m.Timestamp == nil || *m.Timestamp != uint64(at.UnixMilli()) {
			t.Errorf("Tahu reads NDATA %s as %s %#v, want %s %#v at %d: %+v", name, m.Type, m.Value, tahuType(name), want[name], at.UnixMilli(), m)
		}
	}
	var causes []contract.SpikeCauseView
	if s, _ := values["Spikes/Last/causes"].(string); json.Unmarshal([]byte(s), &causes) != nil || len(causes) != 2 ||
		causes[0].PID != 23025 || causes[1].Name != "local_timer" {
		t.Errorf("Spikes/Last/causes = %#v", values["Spikes/Last/causes"])
	}

	// Rebirth: the NBIRTH declares the last spike's values.
	from := len(host.all())
	cmd := sparkplug.AppendPayload(nil, &sparkplug.Payload{Metrics: []sparkplug.Metric{{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true}}})
	host.c.Publish(sparkplug.NodeTopic("plant", sparkplug.NCMD, "edge9"), 0, false, cmd).WaitTimeout(5 * time.Second)
	reborn := decode(host.waitFrom(t, from, "/NBIRTH/edge9", 5*time.Second, nil))
	n := 0
	for _, m := range reborn.Metrics {
		if m.Name == nil || !strings.HasPrefix(*m.Name, "Spikes/") {
			continue
		}
		n++
		if m.Value != values[*m.Name] || m.Type != tahuType(*m.Name) || *m.Alias != aliasOf(names, *m.Name) {
			t.Errorf("Tahu reads the rebirth's %s as %s %#v alias %d, the spike's NDATA had %#v", *m.Name, m.Type, m.Value, *m.Alias, values[*m.Name])
		}
	}
	if n != len(spikeMetricTypes) {
		t.Errorf("the rebirth declares %d spike metrics, want %d", n, len(spikeMetricTypes))
	}
	ms := decodeAll(t, host.all())
	checkSparkplugOrder(t, ms)
}

// aliasOf returns the alias names gives name.
func aliasOf(names map[uint64]string, name string) uint64 {
	for a, n := range names {
		if n == name {
			return a
		}
	}
	return 0
}

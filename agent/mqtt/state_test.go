package mqtt

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/shm"
)

// stateModel returns a bus model of the reference bus, every slave in OP.
func stateModel() *busstate.Model {
	m := busstate.New(nil)
	var slaves []busstate.SlaveInfo
	for _, s := range referenceBus().Slaves {
		slaves = append(slaves, busstate.SlaveInfo{Position: s.Position, Name: s.OrderCode})
	}
	m.Reset(slaves)
	return m
}

// apply feeds an event to the model and then to the publisher, as the
// agent does.
func apply(m *busstate.Model, p *Publisher, kind shm.EventKind, slave uint16) {
	ev := shm.Event{Kind: kind, Slave: slave}
	m.Apply(&ev)
	p.Event(&ev, time.Now())
}

// TestSparkplugLostSlave: a lost slave's device gets its DDEATH and no
// DDATA until it is back, when a fresh DBIRTH comes first; every device is
// born once per connection otherwise; and every metric of every DATA has
// the datatype its BIRTH declared.
func TestSparkplugLostSlave(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	sub := subscribe(t, broker.URL(), "host", "spBv1.0/lost/#", false)
	p, err := New(Config{Broker: broker.URL(), ClientID: "lost", Scheme: SchemeSparkplug, Group: "lost", Node: "n",
		Root: "ecagent/lost/n", Rules: Rules{Interval: 10 * time.Millisecond}, Buffer: 10000, Timeout: 2 * time.Second,
		StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	state := stateModel()
	p.SetBusModel(state)
	model, _ := NewModel(referenceBus(), p.cfg.Rules)
	p.SetBus(model, &fakeImage{img: make([]byte, model.ImageBytes)}, &fakeRing{})
	p.Start()
	t.Cleanup(func() { _ = p.Close(time.Second) })

	sub.waitFor(t, "/DDATA/n/EL1014-3", 5*time.Second, nil)
	p.Window(&cyclestats.Report{Target: 1e6, Counts: cycles(10)}, time.Now())
	sub.waitFor(t, "/NDATA/n", 5*time.Second, nil)
	apply(state, p, shm.EventSlaveLost, 3)
	sub.waitFor(t, "/DDEATH/n/EL1014-3", 5*time.Second, nil)
	sub.waitFor(t, "/NDATA/n", 5*time.Second, func(r received) bool {
		var pl sparkplug.Payload
		return sparkplug.DecodePayload(r.payload, &pl) == nil && len(pl.Metrics) > 0 && pl.Metrics[0].Alias == aliasBusReady && !pl.Metrics[0].Bool
	})
	from := len(sub.all())
	sub.waitFrom(t, from, "/DDATA/n/EL1014-4", 5*time.Second, nil) // the others go on
	apply(state, p, shm.EventSlaveReconnected, 3)
	sub.waitFrom(t, from, "/DDATA/n/EL1014-3", 5*time.Second, nil)
	if err := p.Close(time.Second); err != nil {
		t.Fatal(err)
	}

	ms := decodeAll(t, sub.all())
	checkSparkplugOrder(t, ms)
	births := map[string]int{}
	dead := map[string]bool{}
	types := map[string]map[uint64]uint32{} // by device ("" the node), alias
	for i, m := range ms {
		dev := m.topic.Device
		switch m.topic.Type {
		case sparkplug.NBIRTH, sparkplug.DBIRTH:
			births[dev]++
			dead[dev] = false
			types[dev] = map[uint64]uint32{}
			for _, x := range m.p.Metrics {
				if x.HasAlias {
					types[dev][x.Alias] = x.DataType
				}
			}
		case sparkplug.DDEATH:
			dead[dev] = true
		case sparkplug.NDATA, sparkplug.DDATA:
			if dead[dev] {
				t.Errorf("message %d: DDATA of %s after its DDEATH, before a DBIRTH", i, dev)
			}
			for _, x := range m.p.Metrics {
				want, ok := types[dev][x.Alias]
				if !ok || x.DataType != want {
					t.Errorf("message %d (%s %s): metric alias %d has datatype %d, its birth declared %d (known %v)",
						i, m.topic.Type, dev, x.Alias, x.DataType, want, ok)
				}
			}
		}
	}
	for _, d := range model.Devices {
		want := 1
		if d.Name == "EL1014-3" {
			want = 2 // born, dead, born again
		}
		if births[d.Name] != want {
			t.Errorf("%s: %d DBIRTHs, want %d", d.Name, births[d.Name], want)
		}
	}
}

// TestJSONLostSlave: a lost slave's pd says its data is stale, once, with
// the last values and since when; no pd presents them as fresh until it is
// back; its meta and the bus's state say why.
func TestJSONLostSlave(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/lost/json"
	sub := subscribe(t, broker.URL(), "sub", root+"/#", false)
	p, err := New(Config{Broker: broker.URL(), ClientID: "lostjson", Scheme: SchemeJSON, QoS: 1, Root: root,
		Rules: Rules{Interval: 10 * time.Millisecond}, Buffer: 10000, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	state := stateModel()
	p.SetBusModel(state)
	model, _ := NewModel(referenceBus(), p.cfg.Rules)
	img := &fakeImage{img: make([]byte, model.ImageBytes)}
	img.set(5, 0b0000_0001) // EL1014-3 channel 1 on
	p.SetBus(model, img, &fakeRing{})
	p.Start()
	t.Cleanup(func() { _ = p.Close(time.Second) })

	type pd struct {
		TS         int64          `json:"ts"`
		Quality    string         `json:"quality"`
		StaleSince int64          `json:"stale_since"`
		Values     map[string]any `json:"values"`
	}
	decode := func(r received) pd {
		var v pd
		if err := json.Unmarshal(r.payload, &v); err != nil {
			t.Fatalf("%s: %v", r.payload, err)
		}
		return v
	}
	sub.waitFor(t, "/pd/EL1014-3", 5*time.Second, func(r received) bool { return decode(r).Quality == "good" })
	from := len(sub.all())
	lost := time.Now()
	apply(state, p, shm.EventSlaveLost, 3)
	applied := time.Now()
	img.set(5, 0) // the cycle shows a lost slave's inputs as 0
	stale := decode(sub.waitFrom(t, from, "/pd/EL1014-3", 5*time.Second, func(r received) bool { return decode(r).Quality != "good" }))
	if stale.Quality != "stale" || stale.StaleSince < lost.UnixMilli()-1 || stale.Values["channel_1.input"] != true {
		t.Errorf("pd of a lost slave: %+v, want stale since %d with the last values", stale, lost.UnixMilli())
	}
	meta := sub.waitFrom(t, from, "/meta/EL1014-3", 5*time.Second, nil)
	var mp metaPayload
	if err := json.Unmarshal(meta.payload, &mp); err != nil || mp.State.Presence != "lost" || mp.State.Quality != "stale" || mp.State.Condition != "lost" {
		t.Errorf("meta of a lost slave: %s (%v)", meta.payload, err)
	}
	st := sub.waitFrom(t, from, "/state", 5*time.Second, nil)
	if !strings.Contains(string(st.payload), `"ready":false`) || !strings.Contains(string(st.payload), "1 slave(s) not answering: 3 (EL1014)") {
		t.Errorf("bus state with a slave lost: %s", st.payload)
	}
	// Others go on for a while; the lost one says nothing more that is
	// good. A message sampled before the loss was applied (its ts at or
	// before then) may still arrive after it: it was true when made.
	after := len(sub.all())
	for range 5 {
		after = len(sub.all())
		sub.waitFrom(t, after, "/pd/EL1014-4", 5*time.Second, nil)
	}
	for _, r := range sub.all()[from:] {
		if v := decode(r); strings.HasSuffix(r.topic, "/pd/EL1014-3") && v.Quality == "good" && v.TS > applied.UnixMilli() {
			t.Errorf("a lost slave's data presented as good %d ms after the loss: %s", v.TS-applied.UnixMilli(), r.payload)
		}
	}
	apply(state, p, shm.EventSlaveReconnected, 3)
	sub.waitFrom(t, after, "/pd/EL1014-3", 5*time.Second, func(r received) bool { return decode(r).Quality == "good" })
}

// TestBdSeqSurvivesRestart: the bdSeq goes on from the last run's, kept in
// a 0600 file of a 0700 state directory per group and node.
func TestBdSeqSurvivesRestart(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	tests := []struct {
		group, node string
		want        uint64
	}{{"g", "n", 1}, {"g", "n", 2}, {"g", "other", 1}, {"g", "n", 3}}
	for _, tt := range tests {
		s, err := openBdSeq(dir, tt.group, tt.node)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.next(); err != nil || got != tt.want {
			t.Errorf("%s/%s: bdSeq %d (%v), want %d", tt.group, tt.node, got, err, tt.want)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "sparkplug-bdseq-g-n"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("bdSeq file: %v %v, want mode 0600", fi, err)
	}
	if di, err := os.Stat(dir); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v, want mode 0700", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sparkplug-bdseq-g-n"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openBdSeq(dir, "g", "n"); err == nil {
		t.Error("a garbled bdSeq file was accepted")
	}
}

// TestJSONBringUpFailed: while the cycle process cannot bring the bus up
// there is no bus to publish, and still the retained state says the bus
// is not ready and why, and each failed attempt is an event; once a bus
// is attached and the model reset, the state is ready again.
func TestJSONBringUpFailed(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/bringup/json"
	sub := subscribe(t, broker.URL(), "sub", root+"/#", false)
	p, err := New(Config{Broker: broker.URL(), ClientID: "bringupjson", Scheme: SchemeJSON, QoS: 1, Root: root,
		Rules: Rules{Interval: 10 * time.Millisecond}, Buffer: 10000, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	state := busstate.New(nil)
	p.SetBusModel(state)
	p.Start()
	t.Cleanup(func() { _ = p.Close(time.Second) })
	sub.waitFor(t, "/status", 5*time.Second, nil)

	const why = "bring-up: master: found 5 slaves on the segment, configuration expects 7"
	state.BringUpFailed(busstate.BringUpNotAsConfigured, why)
	p.BringUpFailed(busstate.BringUpNotAsConfigured.String(), why, 1, 200*time.Millisecond, time.Now())
	ev := sub.waitFor(t, "/events", 5*time.Second, func(r received) bool { return strings.Contains(string(r.payload), "bring-up-failed") })
	var e struct {
		Kind, Reason, Error string
		Failures            int
		RetryInMS           int64 `json:"retry_in_ms"`
	}
	if err := json.Unmarshal(ev.payload, &e); err != nil || e.Reason != "not-as-configured" || e.Error != why || e.Failures != 1 || e.RetryInMS != 200 {
		t.Errorf("event %s: %v", ev.payload, err)
	}
	type busState struct {
		Ready   bool   `json:"ready"`
		Why     string `json:"why"`
		Summary string `json:"summary"`
	}
	var st busState
	sub.waitFor(t, "/state", 5*time.Second, func(r received) bool {
		return json.Unmarshal(r.payload, &st) == nil && strings.Contains(st.Why, why)
	})
	if st.Ready || st.Summary != "CYCLE-DOWN (bring-up: not-as-configured)" {
		t.Errorf("state while bring-up fails: %+v", st)
	}

	// Brought up: the bus is attached and ready.
	from := len(sub.all())
	state.Reset([]busstate.SlaveInfo{{Position: 0, Name: "EK1100"}})
	model, _ := NewModel(referenceBus(), p.cfg.Rules)
	p.SetBus(model, &fakeImage{img: make([]byte, model.ImageBytes)}, &fakeRing{})
	sub.waitFrom(t, from, "/state", 5*time.Second, func(r received) bool {
		return json.Unmarshal(r.payload, &st) == nil && st.Ready
	})
}

package test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// TestMQTTJSONEndToEnd runs the agent over a veth pair against the
// simulated reference segment (in this process, so that the test can set
// its inputs and read its outputs) and a private mosquitto, and checks
// with mosquitto_sub what the plant sees: status, meta, process data that
// follows the inputs within one publish period, statistics, events, and
// writes from MQTT — the allowed ones reach the terminals, every other
// one is refused with a reason and changes nothing.
func TestMQTTJSONEndToEnd(t *testing.T) {
	w, devs, _ := referenceOnWire(t, "mqj")
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/edge"
	sub := mqtttest.MosquittoSub(t, broker.Port, root+"/#")

	const interval = 50 * time.Millisecond
	addr := testsupport.FreeAddr(t)
	path := fmt.Sprintf("/dev/shm/ecagent-mqtt-json-%d.shm", os.Getpid())
	a := startAgent(t, "--bus.interface", w.MasterEnd, "--cycle.shm", path, "--status.interval", "0",
		"--metrics.listen", addr, "--metrics.window", "1s", "--site", "plant", "--host", "edge",
		"--mqtt.broker", broker.URL(), "--mqtt.interval", interval.String(),
		"--mqtt.writes.enabled", "--mqtt.writes.allow", "EL2004-1/*,EL4132-5/ao_output_channel_1.analog_output -5..5")
	t.Cleanup(func() { stopAgent(t, a); cyclereap.Stop(t, path) })
	a.waitLog(t, "cycle started", 30*time.Second)

	if m := sub.WaitFrom(t, 0, "/status", 10*time.Second, nil); string(m.Payload) != "online" {
		t.Errorf("status %q", m.Payload)
	}
	for _, name := range []string{"EK1100-0", "EL2004-1", "EL2004-2", "EL1014-3", "EL1014-4", "EL4132-5", "EK1110-6"} {
		m := sub.WaitFrom(t, 0, "/meta/"+name, 10*time.Second, nil)
		var meta struct {
			Slave   string           `json:"slave"`
			Signals []map[string]any `json:"signals"`
		}
		if err := json.Unmarshal(m.Payload, &meta); err != nil || meta.Slave != name {
			t.Errorf("meta of %s: %v %s", name, err, m.Payload)
		}
	}

	// An input that changes shows up within one publish period: every pd
	// message whose snapshot was taken 2 ms after the change (a cycle and
	// the simulator) carries it, and such a message arrives no later than
	// one interval after the change.
	sub.WaitFrom(t, 0, "/pd/EL1014-3", 10*time.Second, nil)
	from := sub.Len()
	devs[3].SetInputs([]byte{0b0101})
	changed := time.Now()
	first := sub.WaitFrom(t, from, "/pd/EL1014-3", 5*time.Second, func(m mqtttest.Message) bool {
		return decodePD(t, m).TS >= changed.Add(2*time.Millisecond).UnixMilli()
	})
	pd := decodePD(t, first)
	want := map[string]any{"channel_1.input": true, "channel_2.input": false, "channel_3.input": true, "channel_4.input": false}
	if fmt.Sprint(pd.Values) != fmt.Sprint(want) {
		t.Errorf("EL1014-3 after the change: %v, want %v", pd.Values, want)
	}
	if lag := time.UnixMilli(pd.TS).Sub(changed); lag > interval+5*time.Millisecond {
		t.Errorf("the first snapshot after the change was taken %v later, more than one period (%v)", lag, interval)
	}

	// Writes.
	pub := func(topic, payload string) {
		t.Helper()
		out, err := exec.Command("mosquitto_pub", "-h", "127.0.0.1", "-p", fmt.Sprint(broker.Port), "-q", "1",
			"-t", root+"/set/"+topic, "-m", payload).CombinedOutput()
		if err != nil {
			t.Fatalf("mosquitto_pub: %v %s", err, out)
		}
	}
	rejects := []struct{ topic, payload, code string }{
		{"EL4132-5/ao_output_channel_1.analog_output", "7.5", "out_of_range"},
		{"EL2004-1/channel_9.output", "true", "unknown"},
		{"EL2004-1/channel_1.output", `"on"`, "wrong_type"},
		{"EL2004-1/channel_1.output", "{", "malformed"},
		{"EL1014-3/channel_1.input", "true", "not_writable"},
		{"EL2004-2/channel_1.output", "true", "not_writable"},
	}
	for _, r := range rejects {
		from := sub.Len()
		pub(r.topic, r.payload)
		m := sub.WaitFrom(t, from, "/events", 5*time.Second, func(m mqtttest.Message) bool {
			return strings.Contains(string(m.Payload), "command-rejected")
		})
		var ev map[string]any
		if err := json.Unmarshal(m.Payload, &ev); err != nil || ev["code"] != r.code || ev["reason"] == "" || ev["topic"] != root+"/set/"+r.topic {
			t.Errorf("%s = %s: %s, want code %s with a reason", r.topic, r.payload, m.Payload, r.code)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if out := devs[1].Outputs(); out[0] != 0 || devs[2].Outputs()[0] != 0 || devs[5].Outputs()[0] != 0 || devs[5].Outputs()[1] != 0 {
		t.Fatalf("a refused write reached a terminal: EL2004 %x %x, EL4132 %x", out, devs[2].Outputs(), devs[5].Outputs())
	}
	from = sub.Len()
	pub("EL2004-1/channel_2.output", "true")
	pub("EL4132-5/ao_output_channel_1.analog_output", `{"value": 2.5}`)
	deadline := time.Now().Add(5 * time.Second)
	wantAO := uint16(math.Round(2.5 / (10.0 / 0x7FFF)))
	for {
		el2004, el4132 := devs[1].Outputs(), devs[5].Outputs()
		ao := uint16(el4132[0]) | uint16(el4132[1])<<8
		if el2004[0]&0x0F == 0b0010 && ao == wantAO {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the allowed writes did not reach the terminals: EL2004 %08b, EL4132 %#04x (want %#04x)", el2004[0], ao, wantAO)
		}
		time.Sleep(5 * time.Millisecond)
	}
	sub.WaitFrom(t, from, "/events", 5*time.Second, func(m mqtttest.Message) bool {
		return strings.Contains(string(m.Payload), `"kind":"command-done"`) && strings.Contains(string(m.Payload), "analog_output")
	})
	sub.WaitFrom(t, from, "/pd/EL4132-5", 5*time.Second, func(m mqtttest.Message) bool {
		v, _ := decodePD(t, m).Values["ao_output_channel_1.analog_output"].(float64)
		return math.Abs(v-2.5) < 0.001
	})

	// Statistics of the 1 s windows; the counters in Prometheus.
	m := sub.WaitFrom(t, 0, "/stats", 10*time.Second, nil)
	var st struct {
		Cycles int64              `json:"cycles"`
		Jitter map[string]float64 `json:"jitter_ns"`
	}
	if err := json.Unmarshal(m.Payload, &st); err != nil || st.Cycles < 500 || st.Jitter["p99"] <= 0 {
		t.Errorf("stats %s", m.Payload)
	}
	fams := scrape(t, addr)
	counter := func(name string, label ...string) float64 {
		f := fams[name]
		if f == nil {
			t.Errorf("%s missing from /metrics", name)
			return -1
		}
		for _, mm := range f.GetMetric() {
			ok := true
			for i := 0; i+1 < len(label); i += 2 {
				found := false
				for _, lp := range mm.GetLabel() {
					found = found || (lp.GetName() == label[i] && lp.GetValue() == label[i+1])
				}
				ok = ok && found
			}
			if ok {
				return mm.GetCounter().GetValue() + mm.GetGauge().GetValue()
			}
		}
		return -1
	}
	if v := counter("ecagent_mqtt_messages_published_total"); v < 50 {
		t.Errorf("published %v", v)
	}
	if v := counter("ecagent_mqtt_connected"); v != 1 {
		t.Errorf("connected %v", v)
	}
	if v := counter("ecagent_mqtt_writes_accepted_total"); v != 2 {
		t.Errorf("writes accepted %v, want 2", v)
	}
	if v := counter("ecagent_mqtt_writes_rejected_total", "reason", "not_writable"); v != 2 {
		t.Errorf("writes rejected as not writable: %v, want 2", v)
	}

	// A clean stop leaves the retained status offline.
	stopAgent(t, a)
	late := mqtttest.MosquittoSub(t, broker.Port, root+"/status")
	if m := late.WaitFrom(t, 0, "/status", 5*time.Second, nil); string(m.Payload) != "offline" {
		t.Errorf("status after the agent stopped: %q", m.Payload)
	}
}

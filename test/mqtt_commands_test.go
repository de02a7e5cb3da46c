package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// TestMQTTCommandsRunOnceOrNotAtAll is issue 30's reproduction of its
// first and third defects, with the agent over a veth pair, the simulated
// reference segment and a private mosquitto:
//
//   - a write to EL2004-1's channel 4 published retained (true) runs once,
//     live; a live false switches it off. At each later subscription of
//     the agent the broker delivers the stored true again, retain flag
//     set: it used to switch the output back on; it is refused
//     ("retained command ignored") and the output stays off;
//   - another client keeps connecting with the agent's client id (which
//     makes the agent reconnect, and resubscribe): the agent finds its
//     session taken over, raises a session-takeover event, counts it in
//     ecagent_mqtt_session_takeovers_total and backs off, so its retained
//     status flips a bounded number of times (it used to flip at every
//     connection of the other client);
//   - a stamped write delivered a second time after a later one (a
//     sender's QoS 1 retransmission, two bridges) is refused as a
//     duplicate: it used to run again and switch the output back.
func TestMQTTCommandsRunOnceOrNotAtAll(t *testing.T) {
	w, devs, _ := referenceOnWire(t, "mqc")
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/edge"
	pub := func(topic, payload string, retain bool) {
		t.Helper()
		args := []string{"-h", "127.0.0.1", "-p", fmt.Sprint(broker.Port), "-q", "1", "-t", root + "/set/" + topic, "-m", payload}
		if retain {
			args = append(args, "-r")
		}
		if out, err := exec.Command("mosquitto_pub", args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_pub: %v %s", err, out)
		}
	}
	outputs := func(want byte, what string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); devs[1].Outputs()[0]&0x0F != want; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: EL2004-1 outputs %04b, want %04b", what, devs[1].Outputs()[0]&0x0F, want)
			}
		}
	}
	sub := mqtttest.MosquittoSub(t, broker.Port, root+"/#")

	addr := testsupport.FreeAddr(t)
	path := fmt.Sprintf("/dev/shm/ecagent-mqtt-cmd-%d.shm", os.Getpid())
	a := startAgent(t, "--bus.interface", w.MasterEnd, "--cycle.shm", path, "--status.interval", "0",
		"--metrics.listen", addr, "--site", "plant", "--host", "edge", "--mqtt.broker", broker.URL(),
		"--mqtt.writes.enabled", "--mqtt.writes.allow", "EL2004-1/*")
	t.Cleanup(func() { stopAgent(t, a); cyclereap.Stop(t, path) })
	a.waitLog(t, "cycle started", 30*time.Second)
	sub.WaitFrom(t, 0, "/events", 10*time.Second, func(m mqtttest.Message) bool {
		return strings.Contains(string(m.Payload), `"kind":"bus-attached"`)
	})

	// Published retained while the agent is subscribed, the write reaches
	// it live (no retain flag) and runs, once; a live false follows.
	pub("EL2004-1/channel_4.output", "true", true)
	outputs(0b1000, "the retained write, delivered live")
	pub("EL2004-1/channel_4.output", "false", false)
	outputs(0b0000, "the live false")

	// Another client keeps taking the agent's client id: the agent
	// reconnects, and the broker delivers the stored true at each of its
	// subscriptions.
	flipsBefore := countStatus(sub.All(), "offline")
	from := sub.Len()
	ctx, cancel := context.WithCancel(context.Background())
	squatted := make(chan int)
	go func() {
		n := 0
		defer func() { squatted <- n }()
		for ctx.Err() == nil {
			c, err := mqttconn.Dial(ctx, mqttconn.Options{Broker: broker.URL(), ClientID: "ecagent-plant-edge", CleanSession: true, Timeout: time.Second})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			n++
			select {
			case <-c.Done():
			case <-ctx.Done():
			}
			c.Close()
		}
	}()
	const contested = 4 * time.Second
	time.Sleep(contested) // the contest itself: a duration, not a synchronisation
	cancel()
	n := <-squatted
	if v := counterValue(t, addr, "ecagent_mqtt_session_takeovers_total"); v < 1 {
		t.Fatalf("ecagent_mqtt_session_takeovers_total = %v after %d connections of another client with the agent's id", v, n)
	}
	// The agent is back after its back-off (10 s at most) and says why it
	// was away.
	sub.WaitFrom(t, from, "/events", 20*time.Second, func(m mqtttest.Message) bool {
		return strings.Contains(string(m.Payload), `"kind":"session-takeover"`) && strings.Contains(string(m.Payload), `"client_id":"ecagent-plant-edge"`)
	})
	flips := countStatus(sub.All(), "offline") - flipsBefore
	t.Logf("another client connected %d times in %v with the agent's client id; the agent's status went offline %d times", n, contested, flips)
	if flips > 5 {
		t.Errorf("the status went offline %d times in %v of contest, want at most 5 (3 to find the takeover, then one per back-off)", flips, contested)
	}

	// The redelivery of the stored true at the agent's subscription after
	// it came back was refused (the connections cut short by the other
	// client ended before they subscribed); a live write after it runs,
	// channel 4 stays off.
	m := sub.WaitFrom(t, from, "/events", 10*time.Second, func(m mqtttest.Message) bool {
		return strings.Contains(string(m.Payload), `"kind":"command-rejected"`)
	})
	var ev map[string]any
	if err := json.Unmarshal(m.Payload, &ev); err != nil || ev["code"] != "retained" || ev["slave"] != "EL2004-1" ||
		ev["signal"] != "channel_4.output" || !strings.HasPrefix(fmt.Sprint(ev["reason"]), "retained command ignored") {
		t.Fatalf("the stored write delivered again: %s, want refused as retained", m.Payload)
	}
	pub("EL2004-1/channel_1.output", "true", false)
	outputs(0b0001, "a live write after the redeliveries")
	if v := counterValue(t, addr, "ecagent_mqtt_writes_rejected_total", "reason", "retained"); v < 1 {
		t.Errorf("ecagent_mqtt_writes_rejected_total{reason=retained} = %v, want one per resubscription", v)
	}

	// A stamped true, a stamped false after it, then the true again with
	// its first stamp (a sender's QoS 1 retransmission, or a second
	// bridge, delivering it late): the copy is refused as a duplicate and
	// channel 2 stays off.
	stamp := time.Now().UnixMilli()
	on := fmt.Sprintf(`{"value": true, "ts": %d}`, stamp)
	from = sub.Len()
	pub("EL2004-1/channel_2.output", on, false)
	outputs(0b0011, "a stamped write")
	pub("EL2004-1/channel_2.output", fmt.Sprintf(`{"value": false, "ts": %d}`, stamp+1), false)
	outputs(0b0001, "a stamped write after it")
	pub("EL2004-1/channel_2.output", on, false)
	m = sub.WaitFrom(t, from, "/events", 10*time.Second, func(m mqtttest.Message) bool {
		return strings.Contains(string(m.Payload), `"kind":"command-rejected"`)
	})
	if err := json.Unmarshal(m.Payload, &ev); err != nil || ev["code"] != "duplicate" || ev["signal"] != "channel_2.output" ||
		!strings.HasPrefix(fmt.Sprint(ev["reason"]), "duplicate command: ") {
		t.Fatalf("the first stamped write delivered again: %s, want refused as a duplicate", m.Payload)
	}
	// The refusal came back after the cycle would have taken the write: a
	// live write behind it runs, and channel 2 is still off.
	pub("EL2004-1/channel_3.output", "true", false)
	outputs(0b0101, "a live write after the duplicate")
	if v := counterValue(t, addr, "ecagent_mqtt_writes_rejected_total", "reason", "duplicate"); v != 1 {
		t.Errorf("ecagent_mqtt_writes_rejected_total{reason=duplicate} = %v, want 1", v)
	}
}

// countStatus counts the status messages with payload.
func countStatus(ms []mqtttest.Message, payload string) int {
	n := 0
	for _, m := range ms {
		if strings.HasSuffix(m.Topic, "/status") && string(m.Payload) == payload {
			n++
		}
	}
	return n
}

// counterValue scrapes one series from the agent's /metrics, the one
// with the label pairs given.
func counterValue(t *testing.T, addr, name string, label ...string) float64 {
	t.Helper()
	f := scrape(t, addr)[name]
	if f == nil {
		t.Fatalf("%s missing from /metrics", name)
	}
	for _, m := range f.GetMetric() {
		ok := true
		for i := 0; i+1 < len(label); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				found = found || lp.GetName() == label[i] && lp.GetValue() == label[i+1]
			}
			ok = ok && found
		}
		if ok {
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("%s%v missing from /metrics", name, label)
	return 0
}

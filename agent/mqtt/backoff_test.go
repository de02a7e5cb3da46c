package mqtt

import (
	"os"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
)

// TestReconnectWait: the wait before an attempt lies between half the
// back-off and the back-off, and is not always the same.
func TestReconnectWait(t *testing.T) {
	t.Parallel()
	seen := map[time.Duration]bool{}
	for range 1000 {
		w := reconnectWait(MaxReconnect)
		if w < MaxReconnect/2 || w > MaxReconnect {
			t.Fatalf("wait %v for a back-off of %v", w, MaxReconnect)
		}
		seen[w] = true
	}
	if len(seen) < 100 {
		t.Fatalf("%d distinct waits in 1000: no jitter", len(seen))
	}
}

// TestReconnectFollowsTheBroker stops a real broker for longer than the
// back-off takes to grow past it, with the agent's default back-off
// settings (mqtt.reconnectmin 100ms, mqtt.reconnectmax 30s), restarts it
// and measures how long after the broker the publisher is connected
// again: within MaxReconnect and the time to connect, where the 30 s cap
// made it up to 21 s (issue 18). MQTT_TEST_OUTAGE sets the outage (7 s by
// default: the old back-off then waits 12.7 s after the outage began).
func TestReconnectFollowsTheBroker(t *testing.T) {
	down := 7 * time.Second
	if s := os.Getenv("MQTT_TEST_OUTAGE"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("MQTT_TEST_OUTAGE=%q: %v", s, err)
		}
		down = d
	}
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	p, err := New(Config{Broker: broker.URL(), ClientID: "backoff", Scheme: SchemeJSON, Root: "ecagent/site/backoff",
		Timeout: 2 * time.Second, ReconnectMin: 100 * time.Millisecond, ReconnectMax: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(0) })
	p.Start()
	waitFor := func(what string, within time.Duration, ok func(Stats) bool) time.Duration {
		t.Helper()
		start := time.Now()
		for deadline := start.Add(within); !ok(p.Stats()); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not %s within %v: %+v", what, within, p.Stats())
			}
		}
		return time.Since(start)
	}
	waitFor("connected", 10*time.Second, func(s Stats) bool { return s.Connected })
	broker.Stop()
	stopped := time.Now()
	waitFor("disconnected", 10*time.Second, func(s Stats) bool { return !s.Connected })
	time.Sleep(time.Until(stopped.Add(down))) // the outage itself: a duration, not a synchronisation
	broker.Start()
	back := waitFor("reconnected", 60*time.Second, func(s Stats) bool { return s.Connected })
	t.Logf("broker down %v; the publisher was connected again %v after the broker was back", down, back.Round(time.Millisecond))
	if limit := MaxReconnect + time.Second; back > limit {
		t.Errorf("reconnected %v after the broker came back, want within %v", back, limit)
	}
}

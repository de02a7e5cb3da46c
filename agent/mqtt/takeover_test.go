package mqtt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
)

// squatter connects to url with client id over and over, at once each
// time the broker ends its connection (or, with hold false, closing each
// connection once made), as a misconfigured client or an attacker with a
// reconnect loop does, until stop is called. It counts its connections.
type squatter struct {
	connects atomic.Int64
	cancel   context.CancelFunc
	done     chan struct{}
}

func squat(t *testing.T, url, id, user, password string, hold bool) *squatter {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &squatter{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			c, err := mqttconn.Dial(ctx, mqttconn.Options{Broker: url, ClientID: id, CleanSession: true,
				Username: user, Password: password, Timeout: time.Second})
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
				continue
			}
			s.connects.Add(1)
			if hold {
				select {
				case <-c.Done():
				case <-ctx.Done():
				}
			}
			c.Close()
		}
	}()
	t.Cleanup(s.stop)
	return s
}

func (s *squatter) stop() {
	s.cancel()
	<-s.done
}

// TestSessionTakeoverBacksOff is issue 30's third defect on a real
// mosquitto: another client keeps connecting with the agent's client id.
// Each connection takes the agent's session over (the broker ends the
// agent's connection and publishes its will), and the agent used to
// reconnect at once, taking it back: the two flapped for as long as the
// other kept at it, hundreds of times in seconds. The agent now finds the
// takeover after takeoverStreak connections cut short, raises a
// session-takeover event, counts it in
// ecagent_mqtt_session_takeovers_total and backs off: a bounded number
// of flips.
func TestSessionTakeoverBacksOff(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/plant/takeover"
	events := subscribe(t, broker.URL(), "events", root+"/events", false)
	status := subscribe(t, broker.URL(), "status", root+"/status", false)
	const backoff = 2 * time.Second
	p, _, _ := newTestPublisher(t, Config{Broker: broker.URL(), QoS: 1, Root: root, TakeoverBackoff: backoff})
	if !waitConnected(p, 5*time.Second) {
		t.Fatal("not connected")
	}
	waitServing(t, p, events)

	const contested = 6 * time.Second
	s := squat(t, broker.URL(), p.cfg.ClientID, "", "", true)
	start := time.Now()
	for p.Stats().Takeovers == 0 {
		if time.Since(start) > contested {
			t.Fatalf("no takeover found in %v: %+v; the other client connected %d times", contested, p.Stats(), s.connects.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	found := time.Since(start)
	time.Sleep(time.Until(start.Add(contested))) // the contest itself: a duration, not a synchronisation
	s.stop()
	st := p.Stats()
	// Flips: takeoverStreak before the takeover is found, then one per
	// back-off (1–2 s, 2–4 s, …): at most 3 more in the remaining time.
	if limit := uint64(takeoverStreak + 4); st.Reconnects > limit {
		t.Errorf("%d reconnects in %v of contest, want at most %d", st.Reconnects, contested, limit)
	}
	t.Logf("takeover found after %v; in %v: %d reconnects, %d takeovers; the other client connected %d times",
		found.Round(time.Millisecond), contested, st.Reconnects, st.Takeovers, s.connects.Load())

	// The agent comes back after its back-off and tells what happened.
	m := events.waitFor(t, "/events", 3*maxBackoffIn(backoff, int(st.Takeovers)), func(m received) bool {
		return strings.Contains(string(m.payload), `"kind":"session-takeover"`)
	})
	for _, want := range []string{`"client_id":"` + p.cfg.ClientID + `"`, fmt.Sprintf(`"connections":%d`, takeoverStreak), `"retry_in_ms":`} {
		if !strings.Contains(string(m.payload), want) {
			t.Errorf("event %s lacks %s", m.payload, want)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(p.Collector())
	if n, err := testutil.GatherAndCount(reg, nameTakeovers); err != nil || n != 1 {
		t.Fatalf("%s: %d series, %v", nameTakeovers, n, err)
	}
	if v := testutil.ToFloat64(takeoverCounter(t, p)); v < 1 {
		t.Errorf("%s = %v, want at least 1", nameTakeovers, v)
	}
	// The retained status flipped as many times as the agent connected
	// (online, will offline, …): bounded, and online at the end.
	status.waitFor(t, "/status", 3*maxBackoffIn(backoff, int(st.Takeovers)), func(m received) bool { return string(m.payload) == "online" && m.at.After(start.Add(contested)) })
	if flips := countPayload(status.all(), "offline"); flips > int(st.Reconnects)+1 {
		t.Errorf("status went offline %d times for %d reconnects", flips, st.Reconnects)
	}
}

// maxBackoffIn is the longest wait after n takeovers with first back-off
// first.
func maxBackoffIn(first time.Duration, n int) time.Duration {
	w := first
	for range max(n-1, 0) {
		w = min(2*w, maxTakeoverBackoff)
	}
	return w
}

func countPayload(ms []received, payload string) int {
	n := 0
	for _, m := range ms {
		if string(m.payload) == payload {
			n++
		}
	}
	return n
}

// takeoverCounter is the publisher's takeover counter as a collector of
// that series alone, for testutil.ToFloat64.
func takeoverCounter(t *testing.T, p *Publisher) prometheus.Collector {
	t.Helper()
	return collectorFunc(func(ch chan<- prometheus.Metric) {
		all := make(chan prometheus.Metric, 64)
		p.Collector().Collect(all)
		close(all)
		for m := range all {
			if strings.Contains(m.Desc().String(), `"`+nameTakeovers+`"`) {
				ch <- m
			}
		}
	})
}

// collectorFunc is an unchecked collector of what its function sends.
type collectorFunc func(chan<- prometheus.Metric)

func (f collectorFunc) Describe(chan<- *prometheus.Desc)    {}
func (f collectorFunc) Collect(ch chan<- prometheus.Metric) { f(ch) }

// TestTakeoverWatch: the rule on its own — only connections the broker
// closed soon after they were made count, takeoverStreak in a row; the
// back-off doubles up to its cap; a lasting connection or one ended
// otherwise ends the streak.
func TestTakeoverWatch(t *testing.T) {
	t.Parallel()
	closed := fmt.Errorf("read: %w", mqttconn.ErrClosedByBroker)
	var w takeoverWatch
	const first = 10 * time.Second
	for i := range takeoverStreak - 1 {
		if _, ok := w.ended(closed, time.Second, first); ok {
			t.Fatalf("a takeover after %d cut connections", i+1)
		}
	}
	var waits []time.Duration
	for range 8 {
		wait, ok := w.ended(closed, time.Second, first)
		if !ok {
			t.Fatalf("no takeover after %d cut connections", w.cut)
		}
		waits = append(waits, wait)
	}
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, maxTakeoverBackoff, maxTakeoverBackoff, maxTakeoverBackoff} {
		if waits[i] < want/2 || waits[i] > want {
			t.Errorf("wait %d: %v, want within %v..%v", i, waits[i], want/2, want)
		}
	}
	for _, end := range []struct {
		err   error
		lived time.Duration
	}{
		{closed, takeoverWindow},                      // it lasted
		{errors.New("no PINGRESP"), time.Millisecond}, // not the broker's doing
	} {
		w.ended(closed, time.Second, first)
		w.ended(end.err, end.lived, first)
		if w.cut != 0 || w.wait != 0 {
			t.Errorf("after %v at %v: streak %d, wait %v; want both reset", end.err, end.lived, w.cut, w.wait)
		}
	}
}

// TestMosquittoConfigPreventsTakeover checks the broker configuration
// docs/mqtt.md gives: with use_username_as_clientid, each client's id is
// its user name, so a client of another user asking for the agent's
// client id gets its own, and the agent is never disconnected.
func TestMosquittoConfigPreventsTakeover(t *testing.T) {
	users := map[string]string{"ecagent-edge1": "agent-secret", "operator": "operator-secret"}
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{Users: users, Extra: []string{"use_username_as_clientid true"}})
	p, err := New(Config{Broker: broker.URL(), ClientID: "ecagent-edge1", Username: "ecagent-edge1", Password: "agent-secret",
		Scheme: SchemeJSON, Root: "ecagent/plant/edge1", Timeout: 2 * time.Second, ReconnectMin: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(0) })
	p.Start()
	if !waitConnected(p, 5*time.Second) {
		t.Fatal("not connected")
	}
	s := squat(t, broker.URL(), "ecagent-edge1", "operator", "operator-secret", false)
	for deadline := time.Now().Add(10 * time.Second); s.connects.Load() < 20; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			s.stop()
			t.Fatalf("the other client connected %d times in 10 s", s.connects.Load())
		}
	}
	s.stop()
	if st := p.Stats(); st.Reconnects != 0 || st.Takeovers != 0 || !st.Connected {
		t.Fatalf("%+v after %d connections of another user asking for the agent's client id", st, s.connects.Load())
	}
}

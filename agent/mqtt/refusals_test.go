package mqtt

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// TestRefusalFlood floods a publisher whose writes are off with 100 000
// writes, as a misbehaving client would (issue 18: 10 000/s made 21.5 MB
// of log in 10 s and 99 998 events). Each is counted; the first
// RefusalBurst are answered in full (an info line, an event); the rest
// are answered by one summary when the interval ends, carrying their
// count; nothing reaches the command ring.
func TestRefusalFlood(t *testing.T) {
	t.Parallel()
	for _, scheme := range []Scheme{SchemeJSON, SchemeSparkplug} {
		const n, burst = 100_000, 5
		name := map[Scheme]string{SchemeJSON: "json", SchemeSparkplug: "sparkplug"}[scheme]
		var logged testsupport.SyncBuffer
		h := newCommandHarness(t, scheme, false)
		p, err := New(Config{Broker: "tcp://127.0.0.1:1", Scheme: scheme, Root: harnessRoot, Group: harnessGroup, Node: harnessNode,
			Rules: h.p.cfg.Rules, Buffer: 2 * n, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
			RefusalInterval: time.Hour, RefusalBurst: burst})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Close(0) })
		model, _ := NewModel(referenceBus(), h.p.cfg.Rules)
		p.SetBus(model, &fakeImage{img: make([]byte, model.ImageBytes)}, h.ring)
		p.out.drain() // the bus's announcement
		topic := harnessRoot + "/set/EL2004-1/channel_1.output"
		if scheme == SchemeSparkplug {
			topic = "spBv1.0/" + harnessGroup + "/DCMD/" + harnessNode + "/EL2004-1"
		}
		payload := []byte("true")
		if scheme == SchemeSparkplug {
			payload = spPayload(sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.Boolean, Bool: true, HasValue: true})
		}
		start := time.Now()
		for range n {
			p.command(topic, payload)
		}
		took := time.Since(start)
		p.refusals.flush(time.Now().Add(2 * time.Hour))

		st := p.Stats()
		if st.Rejected[RejectDisabled] != n || st.RejectedQuiet != n-burst || st.Accepted != 0 {
			t.Errorf("%v: stats %+v; want %d refused (%d quietly), none accepted", name, st, n, n-burst)
		}
		if cmds := h.ring.all(); len(cmds) != 0 {
			t.Fatalf("%v: writes off, yet %d commands reached the ring", name, len(cmds))
		}
		lines := strings.Count(logged.String(), "\n")
		if lines != burst+1 || !strings.Contains(logged.String(), "count=99995") {
			t.Errorf("%v: %d log lines, want %d and a summary of 99995:\n%s", name, lines, burst+1, logged.String())
		}
		var events, summaries, ndata int
		for _, m := range p.out.drain() {
			switch {
			case strings.HasSuffix(m.topic, "/events"):
				events++
				var ev struct {
					Kind  string
					Count uint64
				}
				if err := json.Unmarshal(m.payload, &ev); err != nil {
					t.Fatal(err)
				}
				if ev.Kind == "commands-rejected" {
					summaries++
					if ev.Count != n-burst {
						t.Errorf("%v: summary of %d refusals, want %d", name, ev.Count, n-burst)
					}
				}
			case strings.Contains(m.topic, "/NDATA/"):
				ndata++
			}
		}
		if events != burst+1 || summaries != 1 {
			t.Errorf("%v: %d events (%d summaries), want %d (1)", name, events, summaries, burst+1)
		}
		if scheme == SchemeSparkplug && ndata != burst+1 {
			t.Errorf("NDATA %d, want %d", ndata, burst+1)
		}
		t.Logf("%v: %d refused writes in %v (%.0f/s): %d log lines (%d bytes), %d events",
			scheme, n, took.Round(time.Millisecond), n/took.Seconds(), lines, len(logged.String()), events)
	}
}

// TestRefusalGateIntervals: a flood of 10 000/s for 10 s, in simulated
// time, is answered by burst refusals and one summary per interval, and
// the summaries count every other refusal exactly.
func TestRefusalGateIntervals(t *testing.T) {
	t.Parallel()
	g := refusalGate{interval: time.Second, burst: 5}
	t0 := time.Unix(1000, 0)
	var full, summaries int
	var summed uint64
	r := refusal{re: RejectError{Code: RejectDisabled, Reason: "off"}}
	const n = 100_000
	for i := range n {
		f, sum := g.admit(t0.Add(time.Duration(i)*100*time.Microsecond), &r)
		if f {
			full++
		}
		if sum != nil {
			summaries++
			summed += sum.count
		}
	}
	if sum := g.roll(t0.Add(11 * time.Second)); sum != nil {
		summaries++
		summed += sum.count
	}
	if full != 50 || summaries != 10 || summed+uint64(full) != n {
		t.Fatalf("%d answered in full, %d summaries of %d; want 50, 10 of %d", full, summaries, summed, n-50)
	}
	if g.roll(t0.Add(time.Hour)) != nil {
		t.Fatal("a summary without refusals")
	}
	if f, _ := g.admit(t0.Add(2*time.Hour), &r); !f {
		t.Fatal("the first refusal after a quiet interval is not answered in full")
	}
}

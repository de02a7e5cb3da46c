package mqtt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// TestRetainedCommandsAreRefused: every command topic of either scheme
// delivered with the retain flag is refused once, with the topic's slave
// and signal as far as it names them, and nothing reaches the ring or
// asks for a rebirth; a retained message on a topic that is no command
// (the JSON scheme's own retained meta) is taken as before.
func TestRetainedCommandsAreRefused(t *testing.T) {
	t.Parallel()
	const set = harnessRoot + "/set/"
	dcmd := sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, harnessNode, "EL2004-1")
	ncmd := sparkplug.NodeTopic(harnessGroup, sparkplug.NCMD, harnessNode)
	write := spPayload(sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.Boolean, Bool: true, HasValue: true})
	rebirth := spPayload(sparkplug.Metric{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true, HasValue: true})
	tests := []struct {
		name          string
		scheme        Scheme
		topic         string
		payload       []byte
		slave, signal string // of the refusal; refused false: none
		refused       bool
	}{
		{"JSON write", SchemeJSON, set + "EL2004-1/channel_1.output", []byte("true"), "EL2004-1", "channel_1.output", true},
		{"JSON write in an object", SchemeJSON, set + "EL2004-1/channel_1.output", []byte(`{"value": true}`), "EL2004-1", "channel_1.output", true},
		{"JSON drive fault reset", SchemeJSON, set + "EL2004-1/" + DriveFaultReset, nil, "EL2004-1", DriveFaultReset, true},
		{"JSON write to a topic of too many levels", SchemeJSON, set + "a/b/c", []byte("true"), "", "", true},
		{"JSON meta is no command", SchemeJSON, harnessRoot + "/meta/EL2004-1", []byte("{}"), "", "", false},
		{"JSON events are no command", SchemeJSON, harnessRoot + "/events", []byte("{}"), "", "", false},
		{"DCMD", SchemeSparkplug, dcmd, write, "EL2004-1", "", true},
		{"DCMD malformed", SchemeSparkplug, dcmd, []byte{0xFF}, "EL2004-1", "", true},
		{"NCMD rebirth", SchemeSparkplug, ncmd, rebirth, "", "", true},
		{"DCMD of another node", SchemeSparkplug, sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, "edge2", "EL2004-1"), write, "", "", false},
		{"NDATA of this node", SchemeSparkplug, sparkplug.NodeTopic(harnessGroup, sparkplug.NDATA, harnessNode), write, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCommandHarness(t, tt.scheme, true)
			h.p.message(tt.topic, tt.payload, true, false)
			if !tt.refused {
				h.expect(t)
				return
			}
			h.expect(t, rejection{RejectRetained, retainedReason})
			if h.p.session.rebirth.Load() {
				t.Error("a retained NCMD asked for a rebirth")
			}
			if n := h.p.Stats().Rejected[RejectRetained]; n != 1 {
				t.Errorf("%d retained refusals counted, want 1", n)
			}
			ev := lastEvent(t, h.p)
			for _, want := range []string{`"kind":"command-rejected"`, `"code":"retained"`, `"slave":"` + tt.slave + `"`,
				`"signal":"` + tt.signal + `"`, `"topic":"` + tt.topic + `"`, "retained command ignored"} {
				if !strings.Contains(ev, want) {
					t.Errorf("event %s lacks %s", ev, want)
				}
			}
		})
	}
	// The embedded broker's refusal on the agent's behalf says so.
	h := newCommandHarness(t, SchemeJSON, true)
	h.p.RefuseRetained(set + "EL2004-1/channel_1.output")
	h.p.RefuseRetained(harnessRoot + "/status") // no command: ignored
	h.expect(t, rejection{RejectRetained, brokerRetainedReason})
}

// lastEvent returns the payload of the last event p queued.
func lastEvent(t *testing.T, p *Publisher) string {
	t.Helper()
	ms := p.out.drain()
	for i := len(ms) - 1; i >= 0; i-- {
		if strings.HasSuffix(ms[i].topic, "/events") {
			return string(ms[i].payload)
		}
	}
	t.Fatal("no event queued")
	return ""
}

// TestStaleCommandsAreRefused: a command whose own time (JSON "ts",
// Sparkplug's payload timestamp) is more than MaxCommandAge from the
// agent's clock, either way, is refused as stale and reaches nothing; one
// within it, or without a time, is written.
func TestStaleCommandsAreRefused(t *testing.T) {
	t.Parallel()
	const topic = harnessRoot + "/set/EL2004-1/channel_1.output"
	dcmd := sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, harnessNode, "EL2004-1")
	ncmd := sparkplug.NodeTopic(harnessGroup, sparkplug.NCMD, harnessNode)
	ms := func(d time.Duration) int64 { return time.Now().Add(d).UnixMilli() }
	jsonAt := func(d time.Duration) []byte { return fmt.Appendf(nil, `{"value": true, "ts": %d}`, ms(d)) }
	spAt := func(d time.Duration, m sparkplug.Metric) []byte {
		return sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(ms(d)), Metrics: []sparkplug.Metric{m}})
	}
	write := sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.Boolean, Bool: true, HasValue: true}
	rebirth := sparkplug.Metric{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true, HasValue: true}
	tests := []struct {
		name    string
		scheme  Scheme
		topic   string
		payload []byte
		stale   string // part of the reason; "" written
	}{
		{"JSON now", SchemeJSON, topic, jsonAt(0), ""},
		{"JSON 2 s old", SchemeJSON, topic, jsonAt(-2 * time.Second), ""},
		{"JSON without a time", SchemeJSON, topic, []byte(`{"value": true}`), ""},
		{"JSON a minute old", SchemeJSON, topic, jsonAt(-time.Minute), "stale command: sent at "},
		{"JSON at the epoch", SchemeJSON, topic, []byte(`{"value": true, "ts": 0}`), "stale command: sent at 1970-01-01T00:00:00Z"},
		{"JSON a minute ahead", SchemeJSON, topic, jsonAt(time.Minute), "command from the future"},
		{"DCMD now", SchemeSparkplug, dcmd, spAt(0, write), ""},
		{"DCMD without a time", SchemeSparkplug, dcmd, spPayload(write), ""},
		{"DCMD a minute old", SchemeSparkplug, dcmd, spAt(-time.Minute, write), "stale command: sent at "},
		{"DCMD an hour ahead", SchemeSparkplug, dcmd, spAt(time.Hour, write), "command from the future"},
		{"DCMD beyond int64", SchemeSparkplug, dcmd, sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: 1 << 63, Metrics: []sparkplug.Metric{write}}), "command from the future"},
		{"NCMD a minute old", SchemeSparkplug, ncmd, spAt(-time.Minute, rebirth), "stale command: sent at "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCommandHarness(t, tt.scheme, true)
			h.p.command(tt.topic, tt.payload)
			if tt.stale == "" {
				h.expect(t)
				if len(h.ring.all()) != 1 {
					t.Fatalf("commands %+v, want the write", h.ring.all())
				}
				return
			}
			got := h.log.take()
			if len(got) != 1 || got[0].Code != RejectStale || !strings.Contains(got[0].Reason, tt.stale) {
				t.Fatalf("refusals %q, want one stale refusal saying %q", got, tt.stale)
			}
			if len(h.ring.all()) != 0 || h.p.session.rebirth.Load() {
				t.Fatalf("a stale command ran: commands %+v, rebirth %v", h.ring.all(), h.p.session.rebirth.Load())
			}
		})
	}
}

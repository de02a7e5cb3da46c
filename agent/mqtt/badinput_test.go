package mqtt

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ecagent/ecagent/agent/mqtt/cmdparse"
	"github.com/ecagent/ecagent/agent/mqtt/ruleparse"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// rejection is one refused write as the publisher logs it.
type rejection struct {
	Code   RejectCode
	Reason string
}

// rejectLog is a slog.Handler keeping the publisher's "write rejected"
// records.
type rejectLog struct {
	mu  sync.Mutex
	got []rejection
}

func (l *rejectLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *rejectLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *rejectLog) WithGroup(string) slog.Handler            { return l }

func (l *rejectLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "mqtt: write rejected" {
		return nil
	}
	var rj rejection
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "code":
			rj.Code = RejectCode(a.Value.String())
		case "reason":
			rj.Reason = a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	l.got = append(l.got, rj)
	l.mu.Unlock()
	return nil
}

// take returns the rejections so far and forgets them.
func (l *rejectLog) take() []rejection {
	l.mu.Lock()
	defer l.mu.Unlock()
	got := l.got
	l.got = nil
	return got
}

// commandHarness is a publisher that is never started: commands are fed
// to it directly, as the MQTT client's goroutine would, with no broker.
type commandHarness struct {
	p    *Publisher
	ring *fakeRing
	log  *rejectLog
	root string
}

// Names of the harness's bus and Sparkplug node.
const (
	harnessRoot  = "ecagent/plant/edge1"
	harnessGroup = "plant"
	harnessNode  = "edge1"
)

// newCommandHarness returns a publisher of scheme over referenceBus that
// allows writes to EL2004-1's outputs and to EL4132-5's first channel
// within -5..5.
func newCommandHarness(tb testing.TB, scheme Scheme, writesEnabled bool) *commandHarness {
	tb.Helper()
	rules := Rules{Interval: time.Second}
	for _, w := range []string{"EL2004-1/*", "EL4132-5/ao_output_channel_1.analog_output -5..5"} {
		r, err := ruleparse.ParseWriteRule(w)
		if err != nil {
			tb.Fatal(err)
		}
		rules.Writes = append(rules.Writes, r)
	}
	h := &commandHarness{ring: &fakeRing{}, log: &rejectLog{}, root: harnessRoot}
	p, err := New(Config{Broker: "tcp://127.0.0.1:1", Scheme: scheme, Root: harnessRoot, Group: harnessGroup, Node: harnessNode,
		Rules: rules, Buffer: 64, WritesEnabled: writesEnabled, Logger: slog.New(h.log)})
	if err != nil {
		tb.Fatal(err)
	}
	model, problems := NewModel(referenceBus(), rules)
	if len(problems) != 0 {
		tb.Fatal(problems)
	}
	p.SetBus(model, &fakeImage{img: make([]byte, model.ImageBytes)}, h.ring)
	tb.Cleanup(func() { _ = p.Close(0) })
	h.p = p
	return h
}

// spPayload encodes a Sparkplug payload of metrics.
func spPayload(ms ...sparkplug.Metric) []byte {
	return sparkplug.AppendPayload(nil, &sparkplug.Payload{Metrics: ms})
}

// TestJSONWriteBadInput feeds bad writes of the JSON scheme (topic
// <root>/set/<slave>/<signal>, JSON payload) and checks the exact code
// and reason of each refusal, and that none reaches the command ring.
func TestJSONWriteBadInput(t *testing.T) {
	t.Parallel()
	const set = harnessRoot + "/set/"
	tests := []struct {
		name, topic, payload string
		disabled             bool
		want                 rejection
	}{
		{"no signal level", set + "EL2004-1", "true", false,
			rejection{RejectUnknown, "want " + harnessRoot + "/set/<slave>/<signal>"}},
		{"empty slave level", set + "/channel_1.output", "true", false,
			rejection{RejectUnknown, "want " + harnessRoot + "/set/<slave>/<signal>"}},
		{"empty signal level", set + "EL2004-1/", "true", false,
			rejection{RejectUnknown, "want " + harnessRoot + "/set/<slave>/<signal>"}},
		{"too many levels", set + "EL2004-1/channel_1/output", "true", false,
			rejection{RejectUnknown, "want " + harnessRoot + "/set/<slave>/<signal>"}},
		{"unknown slave", set + "EL9999-9/channel_1.output", "true", false,
			rejection{RejectUnknown, `no slave "EL9999-9"`}},
		{"unknown signal", set + "EL2004-1/channel_9.output", "true", false,
			rejection{RejectUnknown, `slave EL2004-1 has no signal "channel_9.output"`}},
		{"signal names are case-sensitive", set + "EL2004-1/Channel_1.output", "true", false,
			rejection{RejectUnknown, `slave EL2004-1 has no signal "Channel_1.output"`}},
		{"an input", set + "EL1014-3/channel_1.input", "true", false,
			rejection{RejectNotWritable, "EL1014-3/channel_1.input is an input"}},
		{"an output not allowed", set + "EL4132-5/ao_output_channel_2.analog_output", "1", false,
			rejection{RejectNotWritable, "EL4132-5/ao_output_channel_2.analog_output is not in mqtt.writes.allow"}},
		{"fault reset not allowed", set + "EL2004-1/" + DriveFaultReset, "true", false,
			rejection{RejectNotWritable, "EL2004-1/drive-fault-reset is not in mqtt.writes.allow"}},
		{"writes disabled", set + "EL2004-1/channel_1.output", "true", true,
			rejection{RejectDisabled, "writes from MQTT are disabled (mqtt.writes.enabled is false)"}},
		{"empty payload", set + "EL2004-1/channel_1.output", " \n", false,
			rejection{RejectMalformed, "empty payload; " + cmdparse.Allowed}},
		{"oversized payload", set + "EL2004-1/channel_1.output", strings.Repeat(" 1", 600), false,
			rejection{RejectMalformed, "payload of 1200 bytes; a write carries one value of at most 1024 bytes"}},
		{"truncated object", set + "EL2004-1/channel_1.output", `{"value":`, false,
			rejection{RejectMalformed, `not a single JSON value: "{\"value\":"; ` + cmdparse.Allowed}},
		{"not JSON", set + "EL2004-1/channel_1.output", "on", false,
			rejection{RejectMalformed, `not a single JSON value: "on"; ` + cmdparse.Allowed}},
		{"two values", set + "EL2004-1/channel_1.output", "1 0", false,
			rejection{RejectMalformed, `not a single JSON value: "1 0"; ` + cmdparse.Allowed}},
		{"object without value", set + "EL2004-1/channel_1.output", `{"v": true}`, false,
			rejection{RejectMalformed, `the object "{\"v\": true}" has no "value" member; ` + cmdparse.Allowed}},
		{"string for a boolean", set + "EL2004-1/channel_2.output", `"on"`, false,
			rejection{RejectWrongType, `channel_2.output is a boolean, got the string "on"`}},
		{"2 for a boolean", set + "EL2004-1/channel_2.output", "2", false,
			rejection{RejectWrongType, "channel_2.output is a boolean (true, false, 0 or 1), got 2"}},
		{"null value", set + "EL2004-1/channel_2.output", `{"value": null}`, false,
			rejection{RejectWrongType, "channel_2.output is a boolean, got null"}},
		{"array", set + "EL2004-1/channel_2.output", "[true]", false,
			rejection{RejectWrongType, "channel_2.output is a boolean, got an array or object"}},
		{"boolean for a number", set + "EL4132-5/ao_output_channel_1.analog_output", "true", false,
			rejection{RejectWrongType, "ao_output_channel_1.analog_output is a number, got a boolean"}},
		{"above the allowed range", set + "EL4132-5/ao_output_channel_1.analog_output", "7.5", false,
			rejection{RejectOutOfRange, "ao_output_channel_1.analog_output must be within -5..5, got 7.5"}},
		{"below the allowed range", set + "EL4132-5/ao_output_channel_1.analog_output", `{"value": -5.0001}`, false,
			rejection{RejectOutOfRange, "ao_output_channel_1.analog_output must be within -5..5, got -5.0001"}},
		{"overflowing number", set + "EL4132-5/ao_output_channel_1.analog_output", "1e999", false,
			rejection{RejectOutOfRange, "1e999 is too large a number"}},
		// Issue 30: a member besides "value" is refused and named, never
		// ignored: {"value":1,"unit":"mV"} is not 1 V.
		{"a member besides value", set + "EL4132-5/ao_output_channel_1.analog_output", `{"value":1.25,"x":1}`, false,
			rejection{RejectMalformed, `the object "{\"value\":1.25,\"x\":1}" has a member "x" besides "value"; ` + cmdparse.AllowedObject}},
		{"a second value-like member", set + "EL4132-5/ao_output_channel_1.analog_output", `{"value":1.75,"value2":9}`, false,
			rejection{RejectMalformed, `the object "{\"value\":1.75,\"value2\":9}" has a member "value2" besides "value"; ` + cmdparse.AllowedObject}},
		{"a unit", set + "EL4132-5/ao_output_channel_1.analog_output", `{"value":1,"unit":"mV"}`, false,
			rejection{RejectMalformed, `the object "{\"value\":1,\"unit\":\"mV\"}" has a member "unit" besides "value"; ` + cmdparse.AllowedObject}},
		{"a member before value", set + "EL2004-1/channel_1.output", `{"id":"x","value":true}`, false,
			rejection{RejectMalformed, `the object "{\"id\":\"x\",\"value\":true}" has a member "id" besides "value"; ` + cmdparse.AllowedObject}},
		// Underflow is refused like overflow, never written as 0.
		{"underflowing number", set + "EL4132-5/ao_output_channel_1.analog_output", "1e-400", false,
			rejection{RejectOutOfRange, "1e-400 is too small a number (not 0, and below 2.2e-308: it would be written as 0)"}},
		{"underflowing number in an object", set + "EL4132-5/ao_output_channel_1.analog_output", `{"value": -2.5e-330}`, false,
			rejection{RejectOutOfRange, "-2.5e-330 is too small a number (not 0, and below 2.2e-308: it would be written as 0)"}},
		// The refusal names the value as sent, not as rounded for display.
		{"just above the allowed range", set + "EL4132-5/ao_output_channel_1.analog_output", "5.0000000001", false,
			rejection{RejectOutOfRange, "ao_output_channel_1.analog_output must be within -5..5, got 5.0000000001"}},
		{"just below the allowed range", set + "EL4132-5/ao_output_channel_1.analog_output", "-5.00000000000000000001", false,
			rejection{RejectOutOfRange, "ao_output_channel_1.analog_output must be within -5..5, got -5.00000000000000000001"}},
		{"an integer by rounding only", set + "EL2004-1/channel_2.output", "1.00000000000000000001", false,
			rejection{RejectWrongType, "channel_2.output is a boolean (true, false, 0 or 1), got 1.00000000000000000001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCommandHarness(t, SchemeJSON, !tt.disabled)
			h.p.command(tt.topic, []byte(tt.payload))
			h.expect(t, tt.want)
		})
	}
}

// metricWithoutValue encodes a payload of one metric that has a name and
// a datatype but no value field (AppendMetric always writes one).
func metricWithoutValue(name string, typ sparkplug.DataType) []byte {
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.BytesType) // Metric.name
	m = protowire.AppendString(m, name)
	m = protowire.AppendTag(m, 4, protowire.VarintType) // Metric.datatype
	m = protowire.AppendVarint(m, uint64(typ))
	b := protowire.AppendTag(nil, 2, protowire.BytesType) // Payload.metrics
	return protowire.AppendBytes(b, m)
}

// TestSparkplugCommandBadInput feeds bad NCMD and DCMD messages and checks
// the exact code and reason of each refused write (DCMD), or that a bad
// NCMD or a message for another node changes nothing.
func TestSparkplugCommandBadInput(t *testing.T) {
	t.Parallel()
	dcmd := func(device string) string {
		return sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, harnessNode, device)
	}
	ncmd := sparkplug.NodeTopic(harnessGroup, sparkplug.NCMD, harnessNode)
	boolean := func(name string, v bool) sparkplug.Metric {
		return sparkplug.Metric{Name: name, DataType: sparkplug.Boolean, Bool: v, HasValue: true}
	}
	double := func(name string, v float64) sparkplug.Metric {
		return sparkplug.Metric{Name: name, DataType: sparkplug.Double, Float: v, HasValue: true}
	}
	const analog = "ao_output_channel_1.analog_output"
	many := make([]sparkplug.Metric, maxDCMDMetrics+1)
	for i := range many {
		many[i] = boolean("channel_1.output", i%2 == 0)
	}
	tests := []struct {
		name, topic string
		payload     []byte
		want        []rejection // nil: nothing refused
	}{
		{"DCMD truncated protobuf", dcmd("EL2004-1"), []byte{0x12, 0x05, 0x0A}, []rejection{{RejectMalformed,
			"sparkplug: malformed payload: unexpected EOF"}}},
		{"DCMD bad metric", dcmd("EL2004-1"), []byte{0x12, 0x02, 0x0A, 0x05}, []rejection{{RejectMalformed,
			"sparkplug: malformed payload: metric 0: unexpected EOF"}}},
		{"DCMD with too many metrics is refused once, as a whole", dcmd("EL2004-1"), spPayload(many...), []rejection{{RejectMalformed,
			"DCMD with 65 metrics; at most 64 per message"}}},
		{"DCMD unknown device", dcmd("EL9999-9"), spPayload(boolean("channel_1.output", true)),
			[]rejection{{RejectUnknown, `no slave "EL9999-9"`}}},
		{"DCMD unknown metric", dcmd("EL2004-1"), spPayload(boolean("channel_9.output", true)),
			[]rejection{{RejectUnknown, `slave EL2004-1 has no signal "channel_9.output"`}}},
		{"DCMD unknown alias", dcmd("EL2004-1"), spPayload(sparkplug.Metric{Alias: 999999, HasAlias: true, DataType: sparkplug.Boolean, Bool: true, HasValue: true}),
			[]rejection{{RejectUnknown, `slave EL2004-1 has no signal ""`}}},
		{"DCMD input", dcmd("EL1014-3"), spPayload(boolean("channel_1.input", true)),
			[]rejection{{RejectNotWritable, "EL1014-3/channel_1.input is an input"}}},
		{"DCMD output not allowed", dcmd("EL4132-5"), spPayload(double("ao_output_channel_2.analog_output", 1)),
			[]rejection{{RejectNotWritable, "EL4132-5/ao_output_channel_2.analog_output is not in mqtt.writes.allow"}}},
		{"DCMD string for a boolean", dcmd("EL2004-1"), spPayload(sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.String, Str: "on", HasValue: true}),
			[]rejection{{RejectWrongType, `channel_1.output is a boolean, got the string "on"`}}},
		{"DCMD Int32 2 for a boolean", dcmd("EL2004-1"), spPayload(sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.Int32, Int: 2, HasValue: true}),
			[]rejection{{RejectWrongType, "channel_1.output is a boolean (true, false, 0 or 1), got 2"}}},
		{"DCMD null", dcmd("EL2004-1"), spPayload(sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.Boolean, Null: true}),
			[]rejection{{RejectWrongType, "channel_1.output is a boolean, got null"}}},
		{"DCMD no value", dcmd("EL2004-1"), metricWithoutValue("channel_1.output", sparkplug.Boolean),
			[]rejection{{RejectWrongType, "channel_1.output is a boolean, got null"}}},
		{"DCMD DateTime", dcmd("EL2004-1"), spPayload(sparkplug.Metric{Name: "channel_1.output", DataType: sparkplug.DateTime, Int: 1, HasValue: true}),
			[]rejection{{RejectWrongType, "channel_1.output is a boolean, got an array or object"}}},
		{"DCMD NaN", dcmd("EL4132-5"), spPayload(double(analog, math.NaN())),
			[]rejection{{RejectOutOfRange, analog + ": not a finite number"}}},
		{"DCMD infinity", dcmd("EL4132-5"), spPayload(sparkplug.Metric{Name: analog, DataType: sparkplug.Float, Float: math.Inf(-1), HasValue: true}),
			[]rejection{{RejectOutOfRange, analog + ": not a finite number"}}},
		{"DCMD out of range", dcmd("EL4132-5"), spPayload(double(analog, 7.5)),
			[]rejection{{RejectOutOfRange, analog + " must be within -5..5, got 7.5"}}},
		{"DCMD negative Int64 out of range", dcmd("EL4132-5"), spPayload(sparkplug.Metric{Name: analog, DataType: sparkplug.Int64, Int: uint64(1<<64 - 6), HasValue: true}),
			[]rejection{{RejectOutOfRange, analog + " must be within -5..5, got -6"}}},
		{"DCMD one refusal per bad metric", dcmd("EL2004-1"), spPayload(boolean("channel_9.output", true), boolean("channel_1.input", true)),
			[]rejection{{RejectUnknown, `slave EL2004-1 has no signal "channel_9.output"`}, {RejectUnknown, `slave EL2004-1 has no signal "channel_1.input"`}}},
		{"NCMD malformed is dropped", ncmd, []byte{0xFF}, nil},
		{"NCMD rebirth of the wrong type is ignored", ncmd, spPayload(sparkplug.Metric{Name: sparkplug.MetricRebirth, DataType: sparkplug.Int32, Int: 1, HasValue: true}), nil},
		{"DCMD for another node is ignored", sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, "edge2", "EL2004-1"), []byte{0xFF}, nil},
		{"DCMD for another group is ignored", sparkplug.DeviceTopic("other", sparkplug.DCMD, harnessNode, "EL2004-1"), spPayload(boolean("channel_9.output", true)), nil},
		{"not a Sparkplug topic", "spBv1.0/" + harnessGroup + "/DCMD/" + harnessNode + "/EL2004-1/extra", []byte{0xFF}, nil},
		{"JSON write topic under Sparkplug", harnessRoot + "/set/EL2004-1/channel_1.output", []byte("true"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCommandHarness(t, SchemeSparkplug, true)
			h.p.command(tt.topic, tt.payload)
			h.expect(t, tt.want...)
			if h.p.session.rebirth.Load() {
				t.Error("a bad command asked for a rebirth")
			}
		})
	}
}

// TestCommandHarnessAccepts keeps the bad-input tests honest: the same
// harness passes good writes of both schemes to the ring.
func TestCommandHarnessAccepts(t *testing.T) {
	t.Parallel()
	h := newCommandHarness(t, SchemeJSON, true)
	h.p.command(harnessRoot+"/set/EL2004-1/channel_1.output", []byte("true"))
	h.p.command(harnessRoot+"/set/EL4132-5/ao_output_channel_1.analog_output", []byte(`{"value": -5}`))
	h.expect(t)
	if n := len(h.ring.all()); n != 2 {
		t.Errorf("JSON: %d commands reached the ring, want 2", n)
	}

	sp := newCommandHarness(t, SchemeSparkplug, true)
	sp.p.command(sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, harnessNode, "EL2004-1"),
		spPayload(sparkplug.Metric{Name: "channel_2.output", DataType: sparkplug.Boolean, Bool: true, HasValue: true}))
	sp.p.command(sparkplug.NodeTopic(harnessGroup, sparkplug.NCMD, harnessNode),
		spPayload(sparkplug.Metric{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true, HasValue: true}))
	sp.expect(t)
	if n := len(sp.ring.all()); n != 1 {
		t.Errorf("Sparkplug: %d commands reached the ring, want 1", n)
	}
	if !sp.p.session.rebirth.Load() {
		t.Error("NCMD rebirth did not ask for a rebirth")
	}
}

// expect checks that exactly want were refused since the last call, and
// that nothing refused reached the ring.
func (h *commandHarness) expect(t *testing.T, want ...rejection) {
	t.Helper()
	got := h.log.take()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("refusals:\n got %q\nwant %q", got, want)
	}
	if len(want) > 0 && len(h.ring.all()) != 0 {
		t.Errorf("a refused write reached the ring: %+v", h.ring.all())
	}
	var counted uint64
	for _, n := range h.p.Stats().Rejected {
		counted += n
	}
	if counted < uint64(len(want)) {
		t.Errorf("Stats counts %d refusals, want at least %d", counted, len(want))
	}
}

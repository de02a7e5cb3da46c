package mqtt

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/ecagent/ecagent/agent/mqtt/cmdparse"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// TestJSONWriteTyposRefused: the typos of issue 18 used to drive the
// output with the number they start with ("1,000" wrote 1 V) and were
// answered command-done. Each is now refused as malformed, naming the
// payload and what is allowed, and nothing reaches the command ring.
func TestJSONWriteTyposRefused(t *testing.T) {
	t.Parallel()
	topic := harnessRoot + "/set/EL4132-5/ao_output_channel_1.analog_output"
	for _, payload := range []string{"1,000", "3abc", "0x10", "-4.5V", "2]", "4}", `{"value": 1}]`, `{"value": 1, "value": 4}`, "1 V", "2.5.1"} {
		t.Run(payload, func(t *testing.T) {
			t.Parallel()
			h := newCommandHarness(t, SchemeJSON, true)
			h.p.command(topic, []byte(payload))
			got := h.log.take()
			if len(got) != 1 || got[0].Code != RejectMalformed || !strings.Contains(got[0].Reason, cmdparse.Quote([]byte(payload))) {
				t.Fatalf("refusals %q; want one malformed naming %s", got, cmdparse.Quote([]byte(payload)))
			}
			if cmds := h.ring.all(); len(cmds) != 0 {
				t.Fatalf("%q reached the ring: %+v", payload, cmds)
			}
		})
	}
	h := newCommandHarness(t, SchemeJSON, true)
	h.p.command(topic, []byte(" -4.5\n"))
	h.expect(t)
	if n := len(h.ring.all()); n != 1 {
		t.Fatalf("a good write: %d commands", n)
	}
}

// rawMetric encodes a payload of one metric named name, of datatype typ,
// with the given value fields (field number and varint or fixed64 value).
func rawMetric(name string, typ sparkplug.DataType, fields ...[2]uint64) []byte {
	var m []byte
	m = protowire.AppendTag(m, 1, protowire.BytesType)
	m = protowire.AppendString(m, name)
	m = protowire.AppendTag(m, 4, protowire.VarintType)
	m = protowire.AppendVarint(m, uint64(typ))
	for _, f := range fields {
		if f[0] == 13 { // double_value
			m = protowire.AppendTag(m, 13, protowire.Fixed64Type)
			m = protowire.AppendFixed64(m, f[1])
			continue
		}
		m = protowire.AppendTag(m, protowire.Number(f[0]), protowire.VarintType)
		m = protowire.AppendVarint(m, f[1])
	}
	b := protowire.AppendTag(nil, 2, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

// TestSparkplugWriteTyposRefused: a DCMD value that does not fit its own
// datatype used to be cut or misread into a write (an Int8 of 256 wrote
// 0, an Int16 of 65537 wrote 1, a Boolean sent in int_value wrote false);
// each is now refused and nothing reaches the command ring.
func TestSparkplugWriteTyposRefused(t *testing.T) {
	t.Parallel()
	dcmd := sparkplug.DeviceTopic(harnessGroup, sparkplug.DCMD, harnessNode, "EL2004-1")
	const out = "channel_1.output"
	tests := []struct {
		name    string
		payload []byte
		want    rejection
	}{
		{"Int8 of 256", spPayload(sparkplug.Metric{Name: out, DataType: sparkplug.Int8, Int: 256, HasValue: true}),
			rejection{RejectOutOfRange, out + ": 256 does not fit datatype Int8"}},
		{"Int16 of 65537", spPayload(sparkplug.Metric{Name: out, DataType: sparkplug.Int16, Int: 65537, HasValue: true}),
			rejection{RejectOutOfRange, out + ": 65537 does not fit datatype Int16"}},
		{"UInt8 of 257", spPayload(sparkplug.Metric{Name: out, DataType: sparkplug.UInt8, Int: 257, HasValue: true}),
			rejection{RejectOutOfRange, out + ": 257 does not fit datatype UInt8"}},
		{"String of a typo", spPayload(sparkplug.Metric{Name: out, DataType: sparkplug.String, Str: "1,000", HasValue: true}),
			rejection{RejectWrongType, out + ` is a boolean, got the string "1,000"`}},
		{"Boolean in int_value", rawMetric(out, sparkplug.Boolean, [2]uint64{10, 1}),
			rejection{RejectMalformed, `sparkplug: malformed payload: metric 0: metric "channel_1.output" of datatype Boolean carries its value in int_value; a Boolean value goes in boolean_value`}},
		{"Int16 in double_value", rawMetric(out, sparkplug.Int16, [2]uint64{13, 0x3FF0000000000000}),
			rejection{RejectMalformed, `sparkplug: malformed payload: metric 0: metric "channel_1.output" of datatype Int16 carries its value in double_value; a Int16 value goes in int_value`}},
		{"two values", rawMetric(out, sparkplug.Boolean, [2]uint64{14, 1}, [2]uint64{10, 0}),
			rejection{RejectMalformed, `sparkplug: malformed payload: metric 0: metric "channel_1.output" carries 2 values; want one`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newCommandHarness(t, SchemeSparkplug, true)
			h.p.command(dcmd, tt.payload)
			h.expect(t, tt.want)
		})
	}
	h := newCommandHarness(t, SchemeSparkplug, true)
	h.p.command(dcmd, spPayload(
		sparkplug.Metric{Name: out, DataType: sparkplug.Int8, Int: 1, HasValue: true},
		sparkplug.Metric{Name: "channel_2.output", DataType: sparkplug.Int32, Int: 0xFFFFFFFF, HasValue: true}, // -1: refused as a boolean
		sparkplug.Metric{Name: "channel_3.output", DataType: sparkplug.Int64, Int: 0, HasValue: true},
	))
	if got := h.log.take(); len(got) != 1 || got[0] != (rejection{RejectWrongType, "channel_2.output is a boolean (true, false, 0 or 1), got -1"}) {
		t.Fatalf("refusals %q", got)
	}
	if n := len(h.ring.all()); n != 2 {
		t.Fatalf("good writes: %d commands, want 2", n)
	}
}

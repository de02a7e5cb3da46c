package sparkplug_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

func samplePayload() *sparkplug.Payload {
	return &sparkplug.Payload{
		Timestamp: 1700000000123,
		Metrics: []sparkplug.Metric{
			{Name: "bdSeq", DataType: sparkplug.UInt64, Int: 7},
			{Name: "Node Control/Rebirth", DataType: sparkplug.Boolean, Bool: true},
			{Name: "t", HasAlias: true, Alias: 1 << 33, Timestamp: 1700000000000, DataType: sparkplug.Double, Float: -12.5, Historical: true},
			{HasAlias: true, Alias: 3, DataType: sparkplug.Int16, Int: uint64(0xFFFFFFFFFFFF8000)}, // -32768
			{HasAlias: true, Alias: 4, DataType: sparkplug.Int64, Int: uint64(math.MaxUint64)},     // -1
			{HasAlias: true, Alias: 5, DataType: sparkplug.Float, Float: 1.5},
			{Name: "s", DataType: sparkplug.String, Str: "héllo"},
			{Name: "n", DataType: sparkplug.Int32, Null: true},
		},
		Seq: 255, HasSeq: true,
	}
}

// TestPayloadDecodesWithProtobufRuntime checks our wire encoding against
// the protobuf runtime reading the Sparkplug B schema.
func TestPayloadDecodesWithProtobufRuntime(t *testing.T) {
	b := sparkplug.AppendPayload(nil, samplePayload())
	got, err := mqtttest.DecodeSparkplug(b)
	if err != nil {
		t.Fatal(err)
	}
	want := mqtttest.SparkplugPayload{Timestamp: 1700000000123, Seq: 255, HasSeq: true, Metrics: []mqtttest.SparkplugMetric{
		{Name: "bdSeq", HasName: true, DataType: 8, Value: uint64(7)},
		{Name: "Node Control/Rebirth", HasName: true, DataType: 11, Value: true},
		{Name: "t", HasName: true, Alias: 1 << 33, HasAlias: true, Timestamp: 1700000000000, DataType: 10, Historical: true, Value: -12.5},
		{Alias: 3, HasAlias: true, DataType: 2, Value: uint32(0xFFFF8000)},
		{Alias: 4, HasAlias: true, DataType: 4, Value: uint64(math.MaxUint64)},
		{Alias: 5, HasAlias: true, DataType: 9, Value: float32(1.5)},
		{Name: "s", HasName: true, DataType: 12, Value: "héllo"},
		{Name: "n", HasName: true, DataType: 3, Null: true},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("protobuf runtime decoded\n got %+v\nwant %+v", got, want)
	}
}

func TestAppendSeqLater(t *testing.T) {
	p := samplePayload()
	p.HasSeq = false
	b := sparkplug.AppendSeq(sparkplug.AppendPayload(nil, p), 42)
	got, err := mqtttest.DecodeSparkplug(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.HasSeq || got.Seq != 42 || len(got.Metrics) != len(p.Metrics) {
		t.Errorf("seq appended later: got seq %d (present %v), %d metrics", got.Seq, got.HasSeq, len(got.Metrics))
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	want := samplePayload()
	var got sparkplug.Payload
	if err := sparkplug.DecodePayload(sparkplug.AppendPayload(nil, want), &got); err != nil {
		t.Fatal(err)
	}
	for i := range want.Metrics {
		w := want.Metrics[i]
		switch w.DataType {
		case sparkplug.Int16:
			w.Int &= math.MaxUint32 // int_value carries 32 bits
		case sparkplug.Float:
		}
		w.HasValue = !w.Null
		if !reflect.DeepEqual(got.Metrics[i], w) {
			t.Errorf("metric %d:\n got %+v\nwant %+v", i, got.Metrics[i], w)
		}
	}
	if got.Timestamp != want.Timestamp || got.Seq != want.Seq || !got.HasSeq {
		t.Errorf("payload fields: got %+v", got)
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := sparkplug.AppendPayload(nil, samplePayload())
	tests := map[string][]byte{
		"truncated":          good[:len(good)-2],
		"bad tag":            {0x00},
		"metric runs over":   {0x12, 0x05, 0x0A, 0x01},
		"group wire type":    {0x0B},
		"overlong varint":    {0x08, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01},
		"string runs over":   {0x12, 0x03, 0x0A, 0x05, 'a'},
		"length beyond data": {0x12, 0x7F},
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			p := sparkplug.Payload{Metrics: []sparkplug.Metric{{Name: "stale"}}}
			err := sparkplug.DecodePayload(b, &p)
			if !errors.Is(err, sparkplug.ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
			if len(p.Metrics) != 0 || p.HasSeq || p.Timestamp != 0 {
				t.Errorf("an error must leave the payload empty, got %+v", p)
			}
		})
	}
}

func TestDecodeSkipsUnknownFields(t *testing.T) {
	// uuid (4, string) and body (5, bytes) are not ours to read; metrics
	// as a varint, a name as a varint and a double as a varint have the
	// wrong wire type, which protobuf treats as unknown fields.
	b := []byte{0x22, 0x02, 'i', 'd', 0x2A, 0x01, 0x00, 0x10, 0x01, 0x12, 0x04, 0x08, 0x01, 0x68, 0x01, 0x18, 0x05}
	var p sparkplug.Payload
	if err := sparkplug.DecodePayload(b, &p); err != nil {
		t.Fatal(err)
	}
	if !p.HasSeq || p.Seq != 5 || len(p.Metrics) != 1 || p.Metrics[0].Name != "" || p.Metrics[0].HasValue {
		t.Errorf("after unknown fields: %+v", p)
	}
	if _, err := mqtttest.DecodeSparkplug(b); err != nil {
		t.Errorf("the protobuf runtime refuses what we accept: %v", err)
	}
}

func TestAppendPayloadAllocatesNothing(t *testing.T) {
	p := samplePayload()
	buf := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { buf = sparkplug.AppendPayload(buf[:0], p) }); n != 0 {
		t.Errorf("AppendPayload allocates %v times", n)
	}
}

func BenchmarkAppendPayload(b *testing.B) {
	p := samplePayload()
	buf := make([]byte, 0, 1024)
	b.ReportAllocs()
	for b.Loop() {
		buf = sparkplug.AppendPayload(buf[:0], p)
	}
}

func TestTopics(t *testing.T) {
	if got := sparkplug.DeviceTopic("g", sparkplug.DDATA, "n", "EL2004-1"); got != "spBv1.0/g/DDATA/n/EL2004-1" {
		t.Errorf("DeviceTopic = %q", got)
	}
	tests := []struct {
		in   string
		want sparkplug.Topic
		ok   bool
	}{
		{"spBv1.0/g/NCMD/n", sparkplug.Topic{Group: "g", Type: sparkplug.NCMD, Node: "n"}, true},
		{"spBv1.0/g/DCMD/n/d", sparkplug.Topic{Group: "g", Type: sparkplug.DCMD, Node: "n", Device: "d"}, true},
		{"spBv1.0/g/DCMD/n/d/x", sparkplug.Topic{}, false},
		{"spAv1.0/g/NCMD/n", sparkplug.Topic{}, false},
		{"spBv1.0//NCMD/n", sparkplug.Topic{}, false},
		{"spBv1.0/g/NCMD", sparkplug.Topic{}, false},
	}
	for _, tt := range tests {
		got, ok := sparkplug.ParseTopic(tt.in)
		if ok != tt.ok || got != tt.want {
			t.Errorf("ParseTopic(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzDecodePayload: never panics; an error leaves the payload empty; a
// payload that decodes re-encodes to something the protobuf runtime reads.
func FuzzDecodePayload(f *testing.F) {
	f.Add(sparkplug.AppendPayload(nil, samplePayload()))
	f.Add([]byte{0x12, 0x05, 0x0A, 0x01, 'x', 0x20, 0x0B})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var p sparkplug.Payload
		if err := sparkplug.DecodePayload(b, &p); err != nil {
			if len(p.Metrics) != 0 || p.HasSeq || p.Timestamp != 0 {
				t.Fatalf("error %v with a non-empty payload %+v", err, p)
			}
			return
		}
		for i := range p.Metrics {
			p.Metrics[i].Name = ""
			if p.Metrics[i].DataType > sparkplug.Text {
				p.Metrics[i].DataType = sparkplug.TypeUnknown
			}
		}
		if _, err := mqtttest.DecodeSparkplug(sparkplug.AppendPayload(nil, &p)); err != nil {
			t.Fatalf("re-encoded payload does not decode: %v", err)
		}
	})
}

// TestPropertiesRoundTrip: a metric's PropertySet (engineering unit,
// quality) decodes to what was encoded, keys paired with their values in
// order, and leaves the metric's own value intact.
func TestPropertiesRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props []sparkplug.Property
	}{
		{"unit", []sparkplug.Property{{Key: sparkplug.PropertyEngUnit, Type: sparkplug.String, Str: "°C"}}},
		{"quality", []sparkplug.Property{{Key: sparkplug.PropertyQuality, Type: sparkplug.Int32, Int: sparkplug.QualityStale}}},
		{"several", []sparkplug.Property{
			{Key: sparkplug.PropertyEngUnit, Type: sparkplug.String, Str: "V"},
			{Key: sparkplug.PropertyQuality, Type: sparkplug.Int32, Int: sparkplug.QualityBad},
			{Key: "d", Type: sparkplug.Double, Float: 0.25},
			{Key: "b", Type: sparkplug.Boolean, Bool: true},
			{Key: "l", Type: sparkplug.UInt64, Int: 1 << 40},
			{Key: "n", Type: sparkplug.String, Null: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := sparkplug.Payload{Metrics: []sparkplug.Metric{{Name: "Inputs/Channel 1", HasAlias: true, Alias: 9,
				DataType: sparkplug.Double, Float: 21.5, Properties: tc.props}}}
			var out sparkplug.Payload
			if err := sparkplug.DecodePayload(sparkplug.AppendPayload(nil, &in), &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Metrics) != 1 {
				t.Fatalf("%d metrics", len(out.Metrics))
			}
			m := out.Metrics[0]
			if m.Name != "Inputs/Channel 1" || m.Float != 21.5 || !m.HasValue || m.Alias != 9 {
				t.Errorf("metric %+v", m)
			}
			if !reflect.DeepEqual(m.Properties, tc.props) {
				t.Errorf("properties\n got %+v\nwant %+v", m.Properties, tc.props)
			}
			// The protobuf runtime reads the payload too (it skips what it
			// does not model).
			if _, err := mqtttest.DecodeSparkplug(sparkplug.AppendPayload(nil, &in)); err != nil {
				t.Errorf("protobuf runtime: %v", err)
			}
		})
	}
}

// TestMarkHistorical marks every metric of a payload, keeps its other
// fields, and leaves a marked payload as it is.
func TestMarkHistorical(t *testing.T) {
	in := sparkplug.Payload{Timestamp: 1700000000000, Seq: 7, HasSeq: true, Metrics: []sparkplug.Metric{
		{Alias: 3, HasAlias: true, Timestamp: 1700000000001, DataType: sparkplug.Boolean, Bool: true},
		{Alias: 4, HasAlias: true, Timestamp: 1700000000002, DataType: sparkplug.Double, Float: 2.5, Historical: true},
	}}
	enc := sparkplug.AppendPayload(nil, &in)
	marked, err := sparkplug.MarkHistorical(enc)
	if err != nil {
		t.Fatal(err)
	}
	var out sparkplug.Payload
	if err := sparkplug.DecodePayload(marked, &out); err != nil {
		t.Fatal(err)
	}
	if out.Timestamp != in.Timestamp || out.Seq != in.Seq || len(out.Metrics) != 2 {
		t.Fatalf("decoded %+v, want the fields of %+v", out, in)
	}
	for i, m := range out.Metrics {
		want := in.Metrics[i]
		if !m.Historical || m.Alias != want.Alias || m.Timestamp != want.Timestamp || m.Bool != want.Bool || m.Float != want.Float {
			t.Errorf("metric %d = %+v, want %+v marked historical", i, m, want)
		}
	}
	again, err := sparkplug.MarkHistorical(marked)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(marked) {
		t.Errorf("marking a marked payload changed it: %d bytes, was %d", len(again), len(marked))
	}
	if _, err := sparkplug.MarkHistorical(enc[:len(enc)-3]); err == nil {
		t.Error("a payload cut short: no error")
	}
}

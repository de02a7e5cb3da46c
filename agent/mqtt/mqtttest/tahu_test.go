package mqtttest

import (
	"math"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
)

// encode builds a Sparkplug payload with the protobuf runtime: metrics
// are maps from field name to value.
func encode(t *testing.T, ts, seq uint64, metrics ...map[string]any) []byte {
	t.Helper()
	md, err := PayloadDescriptor()
	if err != nil {
		t.Fatal(err)
	}
	msg := dynamicpb.NewMessage(md)
	msg.Set(md.Fields().ByName("timestamp"), protoreflect.ValueOfUint64(ts))
	msg.Set(md.Fields().ByName("seq"), protoreflect.ValueOfUint64(seq))
	list := msg.Mutable(md.Fields().ByName("metrics")).List()
	mmd := md.Messages().ByName("Metric")
	for _, fields := range metrics {
		m := dynamicpb.NewMessage(mmd)
		for name, v := range fields {
			m.Set(mmd.Fields().ByName(protoreflect.Name(name)), protoreflect.ValueOf(v))
		}
		list.Append(protoreflect.ValueOfMessage(m))
	}
	b, err := proto.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTahuDecode checks that the Tahu bridge hands on what Tahu reads:
// 64-bit integers exactly, signedness by datatype, NaN, absent fields as
// nil, the wire datatype and value field beside Tahu's names, and that a
// value in a field other than the datatype's comes back as Tahu reads it
// (Int64 takes long_value: Tahu reads a double_value as null).
func TestTahuDecode(t *testing.T) {
	tahu := NeedTahu(t)
	b := encode(t, 1700000000123, 255,
		map[string]any{"name": "bdSeq", "datatype": uint32(8), "long_value": uint64(math.MaxUint64), "timestamp": uint64(1700000000001)},
		map[string]any{"name": "neg", "alias": uint64(1 << 32), "datatype": uint32(4), "long_value": uint64(math.MaxUint64)},
		map[string]any{"alias": uint64(7), "datatype": uint32(2), "int_value": uint32(0xffffffff)},
		map[string]any{"name": "nan", "datatype": uint32(10), "double_value": math.NaN()},
		map[string]any{"name": "on", "datatype": uint32(11), "boolean_value": true, "is_historical": true},
		map[string]any{"name": "null", "datatype": uint32(10), "is_null": true},
		map[string]any{"name": "mismatch", "datatype": uint32(4), "double_value": 0.5},
	)
	p, err := tahu.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if p.Timestamp == nil || *p.Timestamp != 1700000000123 || p.Seq == nil || *p.Seq != 255 || len(p.Metrics) != 7 {
		t.Fatalf("payload %+v", p)
	}
	m := p.Metrics
	if *m[0].Name != "bdSeq" || m[0].Type != "UInt64" || m[0].Value != uint64(math.MaxUint64) || *m[0].Timestamp != 1700000000001 || m[0].Alias != nil || *m[0].DataType != 8 || m[0].ValueField != "longValue" {
		t.Errorf("UInt64 metric %+v", m[0])
	}
	if m[1].Type != "Int64" || m[1].Value != int64(-1) || *m[1].Alias != 1<<32 || m[1].Timestamp != nil {
		t.Errorf("Int64 metric %+v", m[1])
	}
	if m[2].Name != nil || *m[2].Alias != 7 || m[2].Type != "Int16" || m[2].Value != int64(-1) || m[2].ValueField != "intValue" {
		t.Errorf("Int16 metric %+v", m[2])
	}
	if f, ok := m[3].Value.(float64); !ok || !math.IsNaN(f) {
		t.Errorf("NaN metric %+v", m[3])
	}
	if m[4].Value != true || m[4].IsHistorical == nil || !*m[4].IsHistorical {
		t.Errorf("Boolean metric %+v", m[4])
	}
	if m[5].Value != nil || m[5].Type != "Double" {
		t.Errorf("null metric %+v", m[5])
	}
	if m[6].Type != "Int64" || m[6].ValueField != "doubleValue" || m[6].Value != nil {
		t.Errorf("Int64 metric carrying a double: %+v", m[6])
	}

	if _, err := tahu.Decode([]byte{0xff, 0xff, 0xff}); err == nil {
		t.Error("Tahu decoded garbage")
	}
	// The decoder goes on after a refusal.
	if p, err := tahu.Decode(encode(t, 1, 0)); err != nil || *p.Seq != 0 || len(p.Metrics) != 0 {
		t.Errorf("after garbage: %+v, %v", p, err)
	}
}

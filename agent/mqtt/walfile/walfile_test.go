package walfile

import (
	"bytes"
	"reflect"
	"testing"
)

// logOf is a log of the records.
func logOf(recs ...[]byte) []byte {
	b := []byte(Magic)
	for _, r := range recs {
		b = AppendRecord(b, r)
	}
	return b
}

var (
	msgA = Message{Topic: "a/b", Payload: []byte("one"), QoS: 1, Made: 5}
	msgB = Message{Topic: "spBv1.0/g/DDATA/n/d", Payload: []byte{0, 1, 2}, QoS: 0, Retain: true, Sparkplug: true, Made: -3}
	msgC = Message{Topic: "c", Payload: []byte{}, QoS: 2, Made: 1 << 62}
)

func TestParse(t *testing.T) {
	good := logOf(AppendMessage(nil, 1, &msgA), AppendMessage(nil, 2, &msgB), AppendMessage(nil, 3, &msgC),
		AppendSeq(nil, Done, 2), AppendSeq(nil, Dropped, 4))
	damaged := bytes.Clone(good)
	damaged[len(Magic)+HeaderLen+2] ^= 0xFF // inside message 1's record
	for _, c := range []struct {
		name string
		log  []byte
		want Replay
	}{
		{"empty log", []byte(Magic), Replay{}},
		{"messages, one done, drops carried over", good, Replay{Messages: []Message{msgA, msgC}, Dropped: 4}},
		{"a drop of a logged message counts", logOf(AppendMessage(nil, 7, &msgA), AppendSeq(nil, Drop, 7), AppendSeq(nil, Drop, 8)),
			Replay{Dropped: 1}},
		{"messages come back in the order of their seq", logOf(AppendMessage(nil, 9, &msgB), AppendMessage(nil, 3, &msgA)),
			Replay{Messages: []Message{msgA, msgB}}},
		{"a torn tail is ignored and measured", good[:len(good)-3], Replay{Messages: []Message{msgA, msgC}, Torn: int64(HeaderLen + 2 - 3)}},
		{"a damaged record is skipped and counted", damaged, Replay{Messages: []Message{msgC}, Dropped: 4, Corrupt: 1}},
		{"an unknown record type is counted", logOf([]byte{9, 1}, AppendMessage(nil, 1, &msgA)), Replay{Messages: []Message{msgA}, Corrupt: 1}},
		{"a seq record with trailing bytes is counted", logOf(AppendMessage(nil, 1, &msgA), []byte{Done, 1, 0}), Replay{Messages: []Message{msgA}, Corrupt: 1}},
		{"a damaged length ends the replay", append(logOf(AppendMessage(nil, 1, &msgA)), 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0, 1),
			Replay{Messages: []Message{msgA}, Corrupt: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.log)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Parse = %+v\nwant %+v", got, c.want)
			}
		})
	}
	if _, err := Parse([]byte("ecagent-mqtt-outbox-1\n")); err == nil {
		t.Error("a log without the magic parsed")
	}
}

func TestDecodeMessageRefuses(t *testing.T) {
	rec := AppendMessage(nil, 1, &msgA)
	for _, c := range []struct {
		name string
		rec  []byte
	}{
		{"empty", nil},
		{"another type", AppendSeq(nil, Done, 1)},
		{"cut", rec[:len(rec)-1]},
		{"trailing byte", append(bytes.Clone(rec), 0)},
		{"QoS 3", func() []byte { r := bytes.Clone(rec); r[2] |= 3; return r }()},
		{"unknown flag", func() []byte { r := bytes.Clone(rec); r[2] |= 0x10; return r }()},
	} {
		if _, _, err := DecodeMessage(c.rec); err == nil {
			t.Errorf("%s: decoded", c.name)
		}
	}
}

// FuzzParse: a damaged log never panics the replay; what it replays are
// whole messages that are written again as they were read.
func FuzzParse(f *testing.F) {
	good := logOf(AppendMessage(nil, 1, &msgA), AppendMessage(nil, 2, &msgB), AppendMessage(nil, 3, &msgC),
		AppendSeq(nil, Done, 2), AppendSeq(nil, Drop, 1), AppendSeq(nil, Dropped, 4))
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte(Magic + "\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		rp, err := Parse(b)
		if err != nil {
			if len(b) >= len(Magic) && string(b[:len(Magic)]) == Magic {
				t.Fatalf("a log with the magic refused: %v", err)
			}
			return
		}
		if rp.Torn < 0 || rp.Torn > int64(len(b)) {
			t.Fatalf("torn %d of %d bytes", rp.Torn, len(b))
		}
		for _, m := range rp.Messages {
			if m.QoS > 2 || len(m.Topic) > MaxField || len(m.Payload) > MaxField {
				t.Fatalf("replayed %+v", m)
			}
			seq, back, err := DecodeMessage(AppendMessage(nil, 42, &m))
			if err != nil || seq != 42 || !reflect.DeepEqual(back, m) {
				t.Fatalf("replayed %+v, written again and read %d %+v, %v", m, seq, back, err)
			}
		}
	})
}

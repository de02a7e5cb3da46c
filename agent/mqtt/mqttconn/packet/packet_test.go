package packet

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestPublishEncodeAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 1024)
	payload := bytes.Repeat([]byte("x"), 300)
	var id uint16
	n := testing.AllocsPerRun(1000, func() {
		id++
		buf = AppendPublish(buf[:0], "ecagent/site/host/pd/drive1", payload, 1, false, id)
	})
	if n != 0 {
		t.Fatalf("a QoS 1 publish encode allocates %v times", n)
	}
	h, body, err := Read(bufio.NewReader(bytes.NewReader(buf)), new([]byte), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePublish(h, body)
	if err != nil || string(p.Topic) != "ecagent/site/host/pd/drive1" || p.ID != id || p.QoS != 1 || !bytes.Equal(p.Payload, payload) {
		t.Fatalf("decoded %+v, %v", p, err)
	}
}

func TestRemainingLength(t *testing.T) {
	for _, n := range []int{0, 127, 128, 16383, 16384, 2097151, 2097152, MaxRemaining} {
		b := AppendRemaining(nil, n)
		pkt := append([]byte{TypePingresp << 4}, b...)
		_, err := Decode(bufio.NewReader(bytes.NewReader(pkt)), new([]byte), 0)
		if n == 0 && err != nil {
			t.Fatalf("length 0: %v", err)
		}
		if n > 0 && !errors.Is(err, ErrMalformed) {
			t.Fatalf("length %d over a limit of 0: %v", n, err)
		}
	}
}

func TestMalformedPackets(t *testing.T) {
	for name, pkt := range map[string][]byte{
		"varint of 5 bytes":        {0x30, 0xff, 0xff, 0xff, 0xff, 0x01},
		"length overrun":           {0x30, 10, 0, 3, 'a'},
		"topic overrun":            {0x30, 3, 0, 9, 'a'},
		"QoS 1 without id":         {0x32, 3, 0, 1, 'a'},
		"QoS 1 with id 0":          {0x32, 5, 0, 1, 'a', 0, 0},
		"QoS 3":                    {0x36, 3, 0, 1, 'a'},
		"short PUBACK":             {0x40, 1, 0},
		"long CONNACK":             {0x20, 3, 0, 0, 0},
		"SUBACK without codes":     {0x90, 2, 0, 1},
		"truncated varint":         {0x30, 0x80},
		"PINGRESP with a body":     {0xd0, 1, 0},
		"huge length over a limit": {0x30, 0xff, 0xff, 0xff, 0x7f},
	} {
		_, err := Decode(bufio.NewReader(bytes.NewReader(pkt)), new([]byte), 1<<20)
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{0x30, 5, 0, 1, 'a', 'h', 'i'})
	f.Add([]byte{0x32, 7, 0, 1, 'a', 0, 9, 'h', 'i'})
	f.Add([]byte{0x40, 2, 0, 1, 0x90, 3, 0, 2, 0x80, 0x20, 2, 0, 0, 0xd0, 0})
	f.Add([]byte{0x30, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		var buf []byte
		for range 64 {
			if _, err := Decode(r, &buf, 4096); err != nil {
				return
			}
		}
	})
}

// TestPublishFlags: the fixed header's DUP, QoS and RETAIN bits
// (MQTT 3.1.1 §3.3.1) decode to their fields.
func TestPublishFlags(t *testing.T) {
	body := []byte{0, 1, 'a', 0, 7, 'x'}
	for _, tc := range []struct {
		h           byte
		dup, retain bool
		qos         byte
	}{
		{0x32, false, false, 1},
		{0x3a, true, false, 1},
		{0x3b, true, true, 1},
		{0x33, false, true, 1},
	} {
		p, err := ParsePublish(tc.h, body)
		if err != nil || p.Dup != tc.dup || p.Retain != tc.retain || p.QoS != tc.qos || p.ID != 7 {
			t.Errorf("header %#02x: %+v, %v; want DUP %v RETAIN %v QoS %d", tc.h, p, err, tc.dup, tc.retain, tc.qos)
		}
	}
}

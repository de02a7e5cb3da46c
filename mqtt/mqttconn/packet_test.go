package mqttconn

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestPacketIDWrapSkipsInflight(t *testing.T) {
	c := &Conn{}
	c.next = 65533
	c.ids[65535] = idInflight // still in flight from before the wrap
	c.ids[1] = idAcked        // acknowledged, not yet taken
	c.used = 2
	var got []uint16
	for range 4 {
		id, ok := c.takeID(idInflight, 10)
		if !ok {
			t.Fatal("no id")
		}
		got = append(got, id)
	}
	want := []uint16{65534, 2, 3, 4}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ids %v, want %v", got, want)
		}
	}
	if _, ok := c.takeID(idInflight, 6); ok {
		t.Fatal("an id beyond the in-flight limit")
	}
	c.ids[2] = idAcked
	if !c.Acked(2) || c.Acked(2) || c.Acked(3) || !c.Acked(0) {
		t.Fatal("Acked does not report an acknowledged id exactly once")
	}
}

func TestPublishEncodeAllocatesNothing(t *testing.T) {
	buf := make([]byte, 0, 1024)
	payload := bytes.Repeat([]byte("x"), 300)
	var id uint16
	n := testing.AllocsPerRun(1000, func() {
		id++
		buf = appendPublish(buf[:0], "ecagent/site/host/pd/drive1", payload, 1, false, id)
	})
	if n != 0 {
		t.Fatalf("a QoS 1 publish encode allocates %v times", n)
	}
	h, body, err := readPacket(bufio.NewReader(bytes.NewReader(buf)), new([]byte), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	p, err := parsePublish(h, body)
	if err != nil || string(p.topic) != "ecagent/site/host/pd/drive1" || p.id != id || p.qos != 1 || !bytes.Equal(p.payload, payload) {
		t.Fatalf("decoded %+v, %v", p, err)
	}
}

func TestRemainingLength(t *testing.T) {
	for _, n := range []int{0, 127, 128, 16383, 16384, 2097151, 2097152, maxRemaining} {
		b := appendRemaining(nil, n)
		pkt := append([]byte{typePingresp << 4}, b...)
		_, err := decode(bufio.NewReader(bytes.NewReader(pkt)), new([]byte), 0)
		if n == 0 && err != nil {
			t.Fatalf("length 0: %v", err)
		}
		if n > 0 && !errors.Is(err, errMalformed) {
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
		_, err := decode(bufio.NewReader(bytes.NewReader(pkt)), new([]byte), 1<<20)
		if err == nil {
			t.Errorf("%s: no error", name)
		} else if !errors.Is(err, errMalformed) && !errors.Is(err, io.ErrUnexpectedEOF) {
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
			if _, err := decode(r, &buf, 4096); err != nil {
				return
			}
		}
	})
}

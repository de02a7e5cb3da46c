package foe

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestEncodeWriteRequestBytes(t *testing.T) {
	b := make([]byte, 32)
	n, err := Encode(b, 1, Message{Op: OpWrite, Password: 0x12345678, Name: "fw.bin"})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		12, 0, 0, 0, 0, 0x14, // mailbox: length 6+6, type FoE, counter 1
		0x02, 0, 0x78, 0x56, 0x34, 0x12, // write request, password
		'f', 'w', '.', 'b', 'i', 'n',
	}
	if !bytes.Equal(b[:n], want) {
		t.Errorf("encoded % x, want % x", b[:n], want)
	}
}

func TestRoundTrip(t *testing.T) {
	for _, m := range []Message{
		{Op: OpRead, Password: 7, Name: "log.txt"},
		{Op: OpWrite, Name: "AKD.i00"},
		{Op: OpData, Packet: 3, Data: []byte{1, 2, 3}},
		{Op: OpData, Packet: 9, Data: []byte{}},
		{Op: OpAck, Packet: 0},
		{Op: OpError, Code: ErrNotFound, Data: []byte("no such file")},
		{Op: OpBusy, Done: 40, Entire: 100, Data: []byte{}},
	} {
		b := make([]byte, 64)
		n, err := Encode(b, 5, m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b[:n])
		if err != nil {
			t.Fatalf("%v: %v", m.Op, err)
		}
		if m.Data == nil && (m.Op == OpData || m.Op == OpError || m.Op == OpBusy) {
			m.Data = []byte{}
		}
		if got.Op == OpRead || got.Op == OpWrite || got.Op == OpAck {
			got.Data = nil
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("round trip %+v: got %+v", m, got)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	b := make([]byte, 32)
	n, _ := Encode(b, 1, Message{Op: OpAck, Packet: 1})
	if _, err := Decode(b[:n-1]); !errors.Is(err, ErrShort) {
		t.Errorf("truncated: %v, want ErrShort", err)
	}
	b[5] = 0x13 // CoE
	if _, err := Decode(b[:n]); !errors.Is(err, ErrNotFoE) {
		t.Errorf("CoE: %v, want ErrNotFoE", err)
	}
	b[5], b[6] = 0x14, 9
	if _, err := Decode(b[:n]); err == nil {
		t.Error("opcode 9 decoded")
	}
	if _, err := Encode(make([]byte, 13), 1, Message{Op: OpData, Data: []byte{1, 2}}); !errors.Is(err, ErrTooLong) {
		t.Errorf("too long: %v", err)
	}
	e := &Error{Code: ErrBootstrapOnly, Text: "flash"}
	if e.Error() != "FoE error 0x8008 (bootstrap only): flash" {
		t.Errorf("error text %q", e.Error())
	}
}

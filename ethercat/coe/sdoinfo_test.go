package coe

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

func TestEncodeInfoRequest(t *testing.T) {
	cases := []struct {
		name string
		op   InfoOpCode
		arg  uint16
		sub  uint8
		want []byte
	}{
		{"OD list, all objects", InfoListRequest, ListAll, 0,
			[]byte{8, 0, 0, 0, 0, 0x23, 0x00, 0x80, 0x01, 0, 0, 0, 0x01, 0x00}},
		{"object description", InfoObjectRequest, 0x1018, 0,
			[]byte{8, 0, 0, 0, 0, 0x23, 0x00, 0x80, 0x03, 0, 0, 0, 0x18, 0x10}},
		{"entry description", InfoEntryRequest, 0x1018, 2,
			[]byte{10, 0, 0, 0, 0, 0x23, 0x00, 0x80, 0x05, 0, 0, 0, 0x18, 0x10, 0x02, 0x00}},
	}
	for _, c := range cases {
		b := make([]byte, 32)
		n, err := EncodeInfoRequest(b, 2, c.op, c.arg, c.sub)
		if err != nil || !bytes.Equal(b[:n], c.want) {
			t.Errorf("%s: % x, %v; want % x", c.name, b[:n], err, c.want)
		}
		m, err := Decode(b[:n])
		if err != nil || m.CoE.Service != ServiceSDOInfo || m.Info.OpCode != c.op || m.Info.Incomplete {
			t.Errorf("%s: decodes to %+v, %v", c.name, m, err)
		}
	}
	if _, err := EncodeInfoRequest(make([]byte, 32), 1, InfoListResponse, 1, 0); !errors.Is(err, ErrBadSDO) {
		t.Errorf("encoding a response as a request: %v, want ErrBadSDO", err)
	}
	if _, err := EncodeInfoRequest(make([]byte, 13), 1, InfoListRequest, 1, 0); !errors.Is(err, ErrShort) {
		t.Errorf("request into 13 bytes: %v, want ErrShort", err)
	}
}

func TestInfoFragmentsAndDescriptions(t *testing.T) {
	// A fragment: incomplete, 3 fragments left.
	b := make([]byte, 32)
	n, err := EncodeInfoFragment(b, 5, InfoHeader{OpCode: InfoListResponse, Incomplete: true, FragmentsLeft: 3}, []byte{1, 0, 0x00, 0x10})
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{10, 0, 0, 0, 0, 0x53, 0x00, 0x80, 0x82, 0, 3, 0, 1, 0, 0x00, 0x10}
	if !bytes.Equal(b[:n], want) {
		t.Errorf("fragment % x, want % x", b[:n], want)
	}
	m, err := Decode(b[:n])
	if err != nil || m.Info != (InfoHeader{OpCode: InfoListResponse, Incomplete: true, FragmentsLeft: 3}) || !bytes.Equal(m.InfoData, want[12:]) {
		t.Errorf("fragment decodes to %+v, %v", m, err)
	}
	if _, err := Decode([]byte{4, 0, 0, 0, 0, 0x33, 0x00, 0x80, 0x02, 0}); !errors.Is(err, ErrShort) {
		t.Errorf("SDO information without its header: %v, want ErrShort", err)
	}

	o := ObjectDescription{Index: 0x1C12, DataType: 0x0006, MaxSubIndex: 8, ObjectCode: ObjectArray, Name: "RxPDO assign"}
	ob := AppendObjectDescription(nil, o)
	if !bytes.Equal(ob[:6], []byte{0x12, 0x1C, 0x06, 0x00, 0x08, 0x08}) {
		t.Errorf("object description % x", ob)
	}
	if got, err := DecodeObjectDescription(ob); err != nil || got != o {
		t.Errorf("object description round trip: %+v, %v", got, err)
	}
	e := EntryDescription{Index: 0x1C12, SubIndex: 0, DataType: 0x0005, BitLength: 8, Access: AccessRead | AccessWritePreOp, Name: "SubIndex 000"}
	eb := AppendEntryDescription(nil, e)
	if !bytes.Equal(eb[:10], []byte{0x12, 0x1C, 0, 0, 0x05, 0x00, 0x08, 0x00, 0x0F, 0x00}) {
		t.Errorf("entry description % x", eb)
	}
	if got, err := DecodeEntryDescription(eb); err != nil || got != e {
		t.Errorf("entry description round trip: %+v, %v", got, err)
	}
	for _, short := range [][]byte{ob[:5], eb[:9]} {
		if _, err := DecodeObjectDescription(short[:min(len(short), 5)]); !errors.Is(err, ErrShort) {
			t.Errorf("short object description: %v", err)
		}
		if _, err := DecodeEntryDescription(short); !errors.Is(err, ErrShort) {
			t.Errorf("short entry description: %v", err)
		}
	}

	list := AppendODList(nil, ListAll, []uint16{0x1000, 0x1018, 0x6000})
	typ, got, err := DecodeODList(list, []uint16{0xFFFF})
	if err != nil || typ != ListAll || !slices.Equal(got, []uint16{0xFFFF, 0x1000, 0x1018, 0x6000}) {
		t.Errorf("OD list: %d %04x %v", typ, got, err)
	}
	if _, _, err := DecodeODList(list[:5], nil); !errors.Is(err, ErrBadSDO) {
		t.Errorf("odd OD list: %v, want ErrBadSDO", err)
	}
	if _, _, err := DecodeODList(list[:1], nil); !errors.Is(err, ErrShort) {
		t.Errorf("one-byte OD list: %v, want ErrShort", err)
	}
	if c, err := DecodeInfoError([]byte{0x00, 0x00, 0x02, 0x06}); err != nil || c != AbortNoObject {
		t.Errorf("info error: %v, %v", c, err)
	}
}

func TestInfoNames(t *testing.T) {
	cases := []struct{ got, want string }{
		{DataType(0x0007).String(), "UNSIGNED32"},
		{DataType(0x0009).String(), "VISIBLE_STRING"},
		{DataType(0x0031).String(), "BIT2"},
		{DataType(0x0800).String(), "0x0800"},
		{ObjectRecord.String(), "RECORD"},
		{ObjectCode(3).String(), "0x03"},
		{AccessRead.String(), "r-r-r-"},
		{(AccessRead | AccessWrite).String(), "rwrwrw"},
		{(AccessRead | AccessWritePreOp | AccessTxPDO).String(), "rwr-r- TxPDO"},
		{(AccessReadPreOp | AccessRxPDO).String(), "r----- RxPDO"},
		{InfoErrorRequest.String(), "SDO information error"},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

package coe

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestMailboxHeaderRoundTrip(t *testing.T) {
	cases := []struct {
		h    MailboxHeader
		want []byte
	}{
		{MailboxHeader{Length: 10, Type: TypeCoE, Counter: 1}, []byte{0x0a, 0, 0, 0, 0, 0x13}},
		{MailboxHeader{Length: 0x1234, Address: 0x1001, Channel: 0x3F, Priority: 3, Type: TypeVoE, Counter: 7},
			[]byte{0x34, 0x12, 0x01, 0x10, 0xFF, 0x7F}},
		{MailboxHeader{Length: 4, Type: TypeError}, []byte{4, 0, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		b := make([]byte, MailboxHeaderLen)
		c.h.Encode(b)
		if !bytes.Equal(b, c.want) {
			t.Errorf("%+v encodes to % x, want % x", c.h, b, c.want)
		}
		got, err := DecodeMailboxHeader(b)
		if err != nil || got != c.h {
			t.Errorf("% x decodes to %+v, %v; want %+v", b, got, err, c.h)
		}
	}
	if _, err := DecodeMailboxHeader(make([]byte, 5)); !errors.Is(err, ErrShort) {
		t.Errorf("5-byte header: %v, want ErrShort", err)
	}
}

func TestNextCounter(t *testing.T) {
	want := []uint8{1, 2, 3, 4, 5, 6, 7, 1, 2}
	c := uint8(0)
	for i, w := range want {
		if c = NextCounter(c); c != w {
			t.Fatalf("step %d: counter %d, want %d", i, c, w)
		}
	}
}

func TestCoEHeaderRoundTrip(t *testing.T) {
	for _, h := range []Header{{Service: ServiceSDORequest}, {Service: ServiceSDOResponse}, {Number: 0x1FF, Service: ServiceTxPDO}, {Service: ServiceEmergency}} {
		var b [HeaderLen]byte
		h.Encode(b[:])
		if got, err := DecodeHeader(b[:]); err != nil || got != h {
			t.Errorf("%+v → % x → %+v, %v", h, b, got, err)
		}
	}
	// The SDO request header as the real EL3004 saw it.
	if h, _ := DecodeHeader([]byte{0x00, 0x20}); h.Service != ServiceSDORequest {
		t.Errorf("00 20 decodes to %+v", h)
	}
}

// sdoCases are SDO messages with their exact encoding (after the CoE header).
var sdoCases = []struct {
	name    string
	request bool
	sdo     SDO
	want    []byte
}{
	{"upload request", true, SDO{Specifier: RequestInitiateUpload, Index: 0x1018, SubIndex: 1},
		[]byte{0x40, 0x18, 0x10, 0x01, 0, 0, 0, 0}},
	{"complete upload request", true, SDO{Specifier: RequestInitiateUpload, Index: 0x1C12, Complete: true},
		[]byte{0x50, 0x12, 0x1C, 0x00, 0, 0, 0, 0}},
	{"expedited upload response, 2 bytes", false, SDO{Specifier: ResponseInitiateUpload, Index: 0x100A, Expedited: true, SizeIndicated: true, Size: 2, Data: []byte("08")},
		[]byte{0x4b, 0x0a, 0x10, 0x00, '0', '8', 0, 0}},
	{"expedited upload response, 4 bytes", false, SDO{Specifier: ResponseInitiateUpload, Index: 0x1018, SubIndex: 1, Expedited: true, SizeIndicated: true, Size: 4, Data: []byte{2, 0, 0, 0}},
		[]byte{0x43, 0x18, 0x10, 0x01, 2, 0, 0, 0}},
	{"expedited download without size", true, SDO{Specifier: RequestInitiateDownload, Index: 0x6040, Expedited: true, Size: 4, Data: []byte{6, 0, 0, 0}},
		[]byte{0x22, 0x40, 0x60, 0x00, 6, 0, 0, 0}},
	{"expedited download, 1 byte", true, SDO{Specifier: RequestInitiateDownload, Index: 0x1C12, Expedited: true, SizeIndicated: true, Size: 1, Data: []byte{0}},
		[]byte{0x2f, 0x12, 0x1C, 0x00, 0, 0, 0, 0}},
	{"normal download", true, SDO{Specifier: RequestInitiateDownload, Index: 0x1C12, SizeIndicated: true, Size: 6, Data: []byte{2, 0, 0, 0x16, 1, 0x16}},
		[]byte{0x21, 0x12, 0x1C, 0x00, 6, 0, 0, 0, 2, 0, 0, 0x16, 1, 0x16}},
	{"normal complete download, first part", true, SDO{Specifier: RequestInitiateDownload, Index: 0x1C12, Complete: true, SizeIndicated: true, Size: 100, Data: []byte{2, 0}},
		[]byte{0x31, 0x12, 0x1C, 0x00, 100, 0, 0, 0, 2, 0}},
	{"normal upload response", false, SDO{Specifier: ResponseInitiateUpload, Index: 0x1008, SizeIndicated: true, Size: 5, Data: []byte("EL413")},
		[]byte{0x41, 0x08, 0x10, 0x00, 5, 0, 0, 0, 'E', 'L', '4', '1', '3'}},
	{"download response", false, SDO{Specifier: ResponseInitiateDownload, Index: 0xF008},
		[]byte{0x60, 0x08, 0xF0, 0x00, 0, 0, 0, 0}},
	{"upload segment request, toggle", true, SDO{Specifier: RequestUploadSegment, Toggle: true},
		[]byte{0x70, 0, 0, 0, 0, 0, 0, 0}},
	{"short last upload segment", false, SDO{Specifier: ResponseUploadSegment, Last: true, Data: []byte("bit")},
		[]byte{0x09, 'b', 'i', 't', 0, 0, 0, 0}},
	{"long upload segment", false, SDO{Specifier: ResponseUploadSegment, Toggle: true, Data: []byte("0123456789")},
		[]byte{0x10, '0', '1', '2', '3', '4', '5', '6', '7', '8', '9'}},
	{"download segment, last", true, SDO{Specifier: RequestDownloadSegment, Toggle: true, Last: true, Data: []byte{1, 2, 3, 4, 5, 6, 7}},
		[]byte{0x11, 1, 2, 3, 4, 5, 6, 7}},
	{"download segment response", false, SDO{Specifier: ResponseDownloadSegment, Toggle: true},
		[]byte{0x30, 0, 0, 0, 0, 0, 0, 0}},
	{"abort from the slave", false, SDO{Specifier: SpecifierAbort, Index: 0x5555, Abort: AbortNoObject},
		[]byte{0x80, 0x55, 0x55, 0x00, 0x00, 0x00, 0x02, 0x06}},
	{"abort from the master", true, SDO{Specifier: SpecifierAbort, Index: 0x1008, Abort: AbortToggle},
		[]byte{0x80, 0x08, 0x10, 0x00, 0x00, 0x00, 0x03, 0x05}},
}

func TestSDORoundTrip(t *testing.T) {
	for _, c := range sdoCases {
		b := make([]byte, 64)
		n, err := c.sdo.Encode(b, c.request)
		if err != nil || !bytes.Equal(b[:n], c.want) {
			t.Errorf("%s: encodes to % x, %v; want % x", c.name, b[:n], err, c.want)
			continue
		}
		got, err := DecodeSDO(b[:n], c.request)
		if err != nil || !reflect.DeepEqual(got, c.sdo) {
			t.Errorf("%s: decodes to %+v, %v; want %+v", c.name, got, err, c.sdo)
		}
		// The whole message, with headers.
		msg := make([]byte, 128)
		mn, err := EncodeMessage(msg, 5, c.request, &c.sdo)
		if err != nil || mn != MailboxHeaderLen+HeaderLen+n {
			t.Fatalf("%s: EncodeMessage = %d, %v", c.name, mn, err)
		}
		m, err := Decode(msg)
		wantService := ServiceSDOResponse
		if c.request {
			wantService = ServiceSDORequest
		}
		if err != nil || m.Mailbox.Counter != 5 || m.Mailbox.Type != TypeCoE || int(m.Mailbox.Length) != HeaderLen+n ||
			m.CoE.Service != wantService || !reflect.DeepEqual(m.SDO, c.sdo) {
			t.Errorf("%s: message decodes to %+v, %v", c.name, m, err)
		}
	}
}

func TestSDOEncodeRejects(t *testing.T) {
	cases := []struct {
		name    string
		request bool
		sdo     SDO
		room    int
	}{
		{"expedited 5 bytes", true, SDO{Specifier: RequestInitiateDownload, Expedited: true, SizeIndicated: true, Data: make([]byte, 5)}, 64},
		{"expedited 2 bytes without size", true, SDO{Specifier: RequestInitiateDownload, Expedited: true, Data: make([]byte, 2)}, 64},
		{"unknown specifier", true, SDO{Specifier: 5}, 64},
		{"no room", true, SDO{Specifier: RequestInitiateDownload, SizeIndicated: true, Data: make([]byte, 20)}, 16},
	}
	for _, c := range cases {
		if n, err := c.sdo.Encode(make([]byte, c.room), c.request); err == nil {
			t.Errorf("%s: encoded %d bytes, want an error", c.name, n)
		}
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrShort},
		{"length beyond the buffer", []byte{20, 0, 0, 0, 0, 0x13, 0, 0x30}, ErrShort},
		{"CoE without header", []byte{1, 0, 0, 0, 0, 0x13, 0}, ErrShort},
		{"SDO without command", []byte{2, 0, 0, 0, 0, 0x13, 0, 0x30}, ErrShort},
		{"initiate upload response cut short", []byte{6, 0, 0, 0, 0, 0x13, 0, 0x30, 0x43, 0x18, 0x10, 0x01}, ErrShort},
		{"segment announcing more than it has", []byte{4, 0, 0, 0, 0, 0x13, 0, 0x30, 0x01, 'a'}, ErrShort},
		{"bad server specifier", []byte{10, 0, 0, 0, 0, 0x13, 0, 0x30, 0xA0, 0, 0, 0, 0, 0, 0, 0}, ErrBadSDO},
		{"short mailbox error", []byte{2, 0, 0, 0, 0, 0x00, 1, 0}, ErrShort},
		{"short emergency", []byte{4, 0, 0, 0, 0, 0x13, 0, 0x10, 1, 2}, ErrShort},
	}
	for _, c := range cases {
		if _, err := Decode(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func TestDecodeOtherMessages(t *testing.T) {
	// A mailbox error reply: service 1, code 2 (protocol not supported).
	m, err := Decode([]byte{4, 0, 0, 0, 0, 0x20, 1, 0, 2, 0})
	if err != nil || m.Mailbox.Type != TypeError || m.MailboxError != 2 || m.Mailbox.Counter != 2 {
		t.Errorf("mailbox error reply: %+v, %v", m, err)
	}
	if e := (&MailboxError{Code: m.MailboxError}).Error(); !strings.Contains(e, "mailbox protocol not supported") {
		t.Errorf("MailboxError text %q", e)
	}
	// An emergency: 0x8210 (PDO not processed due to length error), error register 0x11.
	em := Emergency{ErrorCode: 0x8210, ErrorRegister: 0x11, Data: [5]byte{1, 2, 3, 4, 5}}
	b := []byte{10, 0, 0, 0, 0, 0x33, 0x00, 0x10, 0, 0, 0, 0, 0, 0, 0, 0}
	em.Encode(b[MailboxHeaderLen+HeaderLen:])
	if !bytes.Equal(b[8:], []byte{0x10, 0x82, 0x11, 1, 2, 3, 4, 5}) {
		t.Errorf("emergency encodes to % x", b[8:])
	}
	m, err = Decode(b)
	if err != nil || m.CoE.Service != ServiceEmergency || m.Emergency != em {
		t.Errorf("emergency decodes to %+v, %v", m, err)
	}
	if s := em.String(); !strings.Contains(s, "0x8210") || !strings.Contains(s, "0x11") {
		t.Errorf("emergency text %q", s)
	}
	// Another protocol stays in Data.
	m, err = Decode([]byte{3, 0, 0, 0, 0, 0x14, 7, 8, 9, 0xEE})
	if err != nil || m.Mailbox.Type != TypeFoE || !bytes.Equal(m.Data, []byte{7, 8, 9}) {
		t.Errorf("FoE message: %+v, %v", m, err)
	}
}

func TestAbortErrorNamesMeaning(t *testing.T) {
	cases := []struct {
		code AbortCode
		want string
	}{
		{0x06020000, "SDO 0x1234:05 aborted: 0x06020000 (object does not exist in the object dictionary)"},
		{0x06090011, "SDO 0x1234:05 aborted: 0x06090011 (subindex does not exist)"},
		{0x08000022, "present device state"},
		{0x05030000, "toggle bit not changed"},
		{0x12345678, "SDO 0x1234:05 aborted: 0x12345678"},
	}
	for _, c := range cases {
		err := error(&AbortError{Index: 0x1234, SubIndex: 5, Code: c.code})
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("abort %#08x: %q does not contain %q", uint32(c.code), err, c.want)
		}
	}
	if AbortCode(0x12345678).Meaning() != "" {
		t.Error("an unknown code has a meaning")
	}
}

func TestCodecDoesNotAllocate(t *testing.T) {
	_, responses := captureMailboxes(t)
	msg := responses[0]
	out := make([]byte, 128)
	req := SDO{Specifier: RequestInitiateUpload, Index: 0x1018, SubIndex: 1}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Decode(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := EncodeMessage(out, 1, true, &req); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Decode and EncodeMessage allocate %v times", allocs)
	}
}

func BenchmarkDecode(b *testing.B) {
	_, responses := captureMailboxes(b)
	msg := responses[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}

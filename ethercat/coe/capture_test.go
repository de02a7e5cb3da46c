package coe

import (
	"bytes"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/testsupport/capture"
)

// el3004 is the EL3004's station address in the capture; its standard
// mailbox is at 0x1000 (receive) and 0x1080 (send), 128 bytes each.
const (
	el3004Station = 0x1001
	receiveArea   = 0x1000
	sendArea      = 0x1080
)

// captureMailboxes returns the data of every mailbox datagram the slave
// answered (working counter 1) in the real capture: FPWR to the receive
// area (requests) and FPRD of the send area (responses), in order.
func captureMailboxes(tb testing.TB) (requests, responses [][]byte) {
	tb.Helper()
	for _, d := range capture.Datagrams(tb, "ethercrab-ek1914-el3004-mailbox") {
		if d.WKC != 1 || d.ADP() != el3004Station {
			continue
		}
		switch {
		case d.Command == wire.FPWR && d.ADO() == receiveArea:
			requests = append(requests, bytes.Clone(d.Data))
		case d.Command == wire.FPRD && d.ADO() == sendArea:
			responses = append(responses, bytes.Clone(d.Data))
		}
	}
	return requests, responses
}

func TestDecodeRealCapture(t *testing.T) {
	requests, responses := captureMailboxes(t)
	type want struct {
		counter  uint8
		service  Service
		spec     Specifier
		index    uint16
		sub      uint8
		expedite bool
		data     []byte
	}
	wantRequests := []want{
		{1, ServiceSDORequest, RequestInitiateUpload, 0x100A, 0, false, nil},
		{2, ServiceSDORequest, RequestInitiateDownload, 0xF008, 0, true, []byte{1, 0, 0, 0}},
		{3, ServiceSDORequest, RequestInitiateUpload, 0xF008, 0, false, nil},
	}
	wantResponses := []want{
		// The EL3004's software version (0x100A) is the string "08".
		{1, ServiceSDOResponse, ResponseInitiateUpload, 0x100A, 0, true, []byte("08")},
		{2, ServiceSDOResponse, ResponseInitiateDownload, 0xF008, 0, false, nil},
		{3, ServiceSDOResponse, ResponseInitiateUpload, 0xF008, 0, true, []byte{1, 0, 0, 0}},
	}
	check := func(kind string, msgs [][]byte, wants []want) {
		if len(msgs) != len(wants) {
			t.Fatalf("%d %s in the capture, want %d", len(msgs), kind, len(wants))
		}
		for i, b := range msgs {
			m, err := Decode(b)
			if err != nil {
				t.Fatalf("%s %d: %v", kind, i, err)
			}
			w := wants[i]
			if m.Mailbox.Type != TypeCoE || m.Mailbox.Length != 10 || m.Mailbox.Counter != w.counter || m.Mailbox.Address != 0 {
				t.Errorf("%s %d: mailbox header %+v", kind, i, m.Mailbox)
			}
			if m.CoE.Service != w.service || m.CoE.Number != 0 {
				t.Errorf("%s %d: CoE header %+v, want service %v", kind, i, m.CoE, w.service)
			}
			s := m.SDO
			if s.Specifier != w.spec || s.Index != w.index || s.SubIndex != w.sub || s.Expedited != w.expedite || s.Complete {
				t.Errorf("%s %d: SDO %+v, want %+v", kind, i, s, w)
			}
			if !bytes.Equal(s.Data, w.data) {
				t.Errorf("%s %d: data % x, want % x", kind, i, s.Data, w.data)
			}
		}
	}
	check("requests", requests, wantRequests)
	check("responses", responses, wantResponses)

	// Our encoder writes the requests the way ethercrab did, byte for
	// byte (the rest of the 128-byte area is zero).
	for i, b := range requests {
		m, _ := Decode(b)
		out := make([]byte, len(b))
		n, err := EncodeMessage(out, m.Mailbox.Counter, true, &m.SDO)
		if err != nil {
			t.Fatalf("encode request %d: %v", i, err)
		}
		if n != MailboxHeaderLen+10 || !bytes.Equal(out, b) {
			t.Errorf("request %d re-encoded:\n% x\nwant\n% x", i, out[:16], b[:16])
		}
	}
}

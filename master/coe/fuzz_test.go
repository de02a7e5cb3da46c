package coe

import (
	"bytes"
	"testing"
)

// FuzzDecode checks that no input makes the decoder panic, that what it
// decodes stays inside the input, and that a decoded SDO encodes again to
// something that decodes to the same SDO.
func FuzzDecode(f *testing.F) {
	requests, responses := captureMailboxes(f)
	for _, b := range append(requests, responses...) {
		f.Add(b)
	}
	for _, c := range sdoCases {
		msg := make([]byte, 64)
		n, err := EncodeMessage(msg, 1, c.request, &c.sdo)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(msg[:n])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		if int(m.Mailbox.Length) != len(m.Data) {
			t.Fatalf("Data has %d bytes, header says %d", len(m.Data), m.Mailbox.Length)
		}
		if m.Mailbox.Type != TypeCoE || (m.CoE.Service != ServiceSDORequest && m.CoE.Service != ServiceSDOResponse) {
			return
		}
		request := m.CoE.Service == ServiceSDORequest
		s := m.SDO
		if s.Expedited && !s.SizeIndicated && len(s.Data) != expeditedMax {
			t.Fatalf("expedited without size has %d bytes", len(s.Data))
		}
		out := make([]byte, len(b)+16)
		n, err := EncodeMessage(out, m.Mailbox.Counter, request, &s)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", s, err)
		}
		again, err := Decode(out[:n])
		if err != nil {
			t.Fatalf("re-encoded % x does not decode: %v", out[:n], err)
		}
		if again.SDO.Specifier != s.Specifier || again.SDO.Index != s.Index || again.SDO.SubIndex != s.SubIndex ||
			again.SDO.Abort != s.Abort || again.SDO.Toggle != s.Toggle || again.SDO.Last != s.Last ||
			again.SDO.Complete != s.Complete || again.SDO.Expedited != s.Expedited || !bytes.Equal(again.SDO.Data, s.Data) {
			t.Fatalf("round trip changed the SDO:\n%+v\n%+v", s, again.SDO)
		}
	})
}

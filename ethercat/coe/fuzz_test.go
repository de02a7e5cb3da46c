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

// FuzzInfo feeds SDO information data (after the CoE header) to the
// SDO information decoders: none may panic, the OD list never holds more
// indexes than the data has room for, and descriptions encode back to the
// bytes they came from.
func FuzzInfo(f *testing.F) {
	_, responses := captureMailboxes(f)
	for _, b := range responses {
		if len(b) > MailboxHeaderLen+HeaderLen {
			f.Add(b[MailboxHeaderLen+HeaderLen:])
		}
	}
	for _, c := range infoSeeds() {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeInfoHeader(b)
		if err != nil {
			return
		}
		head := make([]byte, InfoHeaderLen)
		h.Encode(head)
		if again, _ := DecodeInfoHeader(head); again != h {
			t.Fatalf("info header %+v encodes to % x, decodes to %+v", h, head, again)
		}
		data := b[InfoHeaderLen:]
		if _, list, err := DecodeODList(data, nil); err == nil && len(list) != (len(data)-2)/2 {
			t.Fatalf("OD list of %d bytes has %d indexes", len(data), len(list))
		}
		if o, err := DecodeObjectDescription(data); err == nil {
			if got := AppendObjectDescription(nil, o); !bytes.Equal(got[:4], data[:4]) || !bytes.Equal(got[6:], data[6:]) || got[4] != data[4] {
				t.Fatalf("object description % x encodes to % x", data, got)
			}
		}
		if e, err := DecodeEntryDescription(data); err == nil {
			if got := AppendEntryDescription(nil, e); !bytes.Equal(got, data) {
				t.Fatalf("entry description % x encodes to % x", data, got)
			}
		}
		_, _ = DecodeInfoError(data)
	})
}

// infoSeeds are SDO information messages (after the CoE header) as the
// simulator sends them.
func infoSeeds() [][]byte {
	with := func(h InfoHeader, data []byte) []byte {
		b := make([]byte, InfoHeaderLen, InfoHeaderLen+len(data))
		h.Encode(b)
		return append(b, data...)
	}
	return [][]byte{
		with(InfoHeader{OpCode: InfoListResponse}, AppendODList(nil, ListAll, []uint16{0x1000, 0x1008, 0x1018})),
		with(InfoHeader{OpCode: InfoListResponse, Incomplete: true, FragmentsLeft: 2}, AppendODList(nil, ListAll, []uint16{0x1000})),
		with(InfoHeader{OpCode: InfoObjectReply}, AppendObjectDescription(nil, ObjectDescription{Index: 0x1018, DataType: 0x23,
			MaxSubIndex: 4, ObjectCode: ObjectRecord, Name: "Identity"})),
		with(InfoHeader{OpCode: InfoEntryReply}, AppendEntryDescription(nil, EntryDescription{Index: 0x1018, SubIndex: 2,
			DataType: 7, BitLength: 32, Access: AccessRead, Name: "Product code"})),
		with(InfoHeader{OpCode: InfoErrorRequest}, []byte{0x00, 0x00, 0x02, 0x06}),
	}
}

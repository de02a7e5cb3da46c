package replay

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// frame builds a request (answer false) or answer frame with one datagram.
func frame(t *testing.T, at int64, answer bool, cmd wire.Command, index uint8, adp, ado uint16, data []byte) Frame {
	t.Helper()
	buf := make([]byte, wire.MaxFrameLen)
	var b wire.Builder
	src := [6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}
	if answer {
		src[0] |= 0x02
	}
	if err := b.Reset(buf, [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, src); err != nil {
		t.Fatal(err)
	}
	if err := b.AppendData(cmd, index, wire.PhysicalAddress(adp, ado), data); err != nil {
		t.Fatal(err)
	}
	return Frame{Time: at, Data: append([]byte(nil), b.Bytes()...)}
}

// TestPairingByIndex: answers that come back after later requests (frames
// in flight) belong to the request with their datagrams; a request
// resent without an answer counts as lost; an answer to nothing as stray.
func TestPairingByIndex(t *testing.T) {
	two := []byte{0, 0}
	frames := []Frame{
		frame(t, 0, false, wire.BRD, 1, 0, 0x0000, two),
		frame(t, 10, false, wire.BRD, 2, 0, 0x0130, two),
		frame(t, 20, true, wire.BRD, 2, 2, 0x0130, []byte{1, 0}), // index 2 first
		frame(t, 30, true, wire.BRD, 1, 2, 0x0000, []byte{0x11, 0}),
		frame(t, 40, false, wire.BRD, 3, 0, 0x0000, two), // lost, then resent
		frame(t, 50, false, wire.BRD, 3, 0, 0x0000, two),
		frame(t, 60, true, wire.BRD, 3, 2, 0x0000, []byte{0x11, 0}),
		frame(t, 70, true, wire.BRD, 9, 2, 0x0000, []byte{0x11, 0}), // stray
	}
	c := FromFrames(frames)
	if len(c.Exchanges) != 3 || c.Lost != 1 || c.Strays != 1 {
		t.Fatalf("%d exchanges, %d lost, %d strays; want 3, 1, 1", len(c.Exchanges), c.Lost, c.Strays)
	}
	for i, want := range []struct{ sent, returned int64 }{{0, 30}, {10, 20}, {50, 60}} {
		if ex := c.Exchanges[i]; ex.Sent != want.sent || ex.Returned != want.returned {
			t.Errorf("exchange %d: sent %d returned %d, want %d %d", i, ex.Sent, ex.Returned, want.sent, want.returned)
		}
	}
}

// TestMidSession: a capture that reads by station address before assigning
// any starts mid-session, at the lowest address and the state read.
func TestMidSession(t *testing.T) {
	st := binary.LittleEndian.AppendUint16(nil, uint16(esc.StatePreOp))
	frames := []Frame{
		frame(t, 0, false, wire.FPRD, 1, 0x03EA, 0x0130, []byte{0, 0}),
		frame(t, 1, true, wire.FPRD, 1, 0x03EA, 0x0130, st),
		frame(t, 2, false, wire.FPRD, 2, 0x03E9, 0x0130, []byte{0, 0}),
		frame(t, 3, true, wire.FPRD, 2, 0x03E9, 0x0130, st),
	}
	frames[1].Data[len(frames[1].Data)-2] = 1 // WKC 1
	frames[3].Data[len(frames[3].Data)-2] = 1
	s, ok := FromFrames(frames).MidSession()
	if !ok || s.FirstStation != 0x03E9 || s.State != esc.StatePreOp {
		t.Errorf("MidSession = %+v, %v; want 0x03e9 PREOP", s, ok)
	}
	assigning := append([]Frame{
		frame(t, -2, false, wire.APWR, 0, 0, 0x0010, []byte{0xE9, 0x03}),
		frame(t, -1, true, wire.APWR, 0, 1, 0x0010, []byte{0xE9, 0x03}),
	}, frames...)
	if s, ok := FromFrames(assigning).MidSession(); ok {
		t.Errorf("a capture that assigns addresses first: MidSession = %+v, want none", s)
	}
}

package master

import (
	"bytes"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// TestAnswersTellsAnswersFromJunk builds a cyclic frame (LRW, BRD of AL
// status, APRD) and checks which received frames count as its answer:
// only what a segment can make of it.
func TestAnswersTellsAnswersFromJunk(t *testing.T) {
	src := [6]byte{0x00, 0x1b, 0x21, 0x3c, 0x4d, 0x5e} // a NIC's universal address
	var b wire.Builder
	sent := make([]byte, wire.MaxFrameLen)
	if err := b.Reset(sent, broadcastMAC, src); err != nil {
		t.Fatal(err)
	}
	_, _ = b.Append(wire.LRW, 7, 0x00010000, 6)
	_, _ = b.Append(wire.BRD, 7, wire.PhysicalAddress(0, 0x0130), 2)
	_, _ = b.Append(wire.APRD, 7, wire.PhysicalAddress(0xFFFE, 0x0110), 2)
	sent = bytes.Clone(b.Bytes())

	// answer returns what the segment sends back, changed by mutate.
	answer := func(mutate func(f *wire.Frame, ds []*wire.Datagram)) []byte {
		out := bytes.Clone(sent)
		out[6] |= 0x02 // ESC port 0 sets the locally administered bit
		var f wire.Frame
		if err := f.Decode(out); err != nil {
			t.Fatal(err)
		}
		it := f.Datagrams()
		var ds []*wire.Datagram
		for {
			d := new(wire.Datagram)
			if !it.Next(d) {
				break
			}
			ds = append(ds, d)
		}
		// What the slaves do: data, working counters, positions.
		ds[0].Data[0] = 0x5A
		ds[0].SetWKC(8)
		ds[1].SetWKC(7)
		ds[2].SetAddress(wire.PhysicalAddress(0x0001, 0x0110))
		ds[2].SetWKC(1)
		if mutate != nil {
			mutate(&f, ds)
		}
		return out
	}
	other := func(cmd wire.Command) []byte {
		var ob wire.Builder
		buf := make([]byte, wire.MaxFrameLen)
		s := src
		s[0] |= 0x02
		_ = ob.Reset(buf, broadcastMAC, s)
		_, _ = ob.Append(cmd, 7, 0x00010000, 6)
		return ob.Bytes()
	}
	cases := []struct {
		name  string
		frame []byte
		want  int
	}{
		{"the segment's answer", answer(nil), answerTaken},
		{"from the master's own address", func() []byte { a := answer(nil); a[6] &^= 0x02; return a }(), answerTaken},
		{"from another address", func() []byte { a := answer(nil); a[11] ^= 0xFF; return a }(), answerForeign},
		{"LRW alone with WKC 8 (no AL status read)", func() []byte { f := other(wire.LRW); f[6+0] = src[0] | 0x02; return f }(), answerMismatch},
		{"a datagram's index changed", answer(func(f *wire.Frame, _ []*wire.Datagram) {
			f.Bytes()[wire.EthernetHeaderLen+wire.HeaderLen+10+6+2+1] = 9 // second datagram's index
		}), answerMismatch},
		{"the logical address changed", answer(func(_ *wire.Frame, ds []*wire.Datagram) { ds[0].SetAddress(0x00020000) }), answerMismatch},
		{"a register offset changed", answer(func(_ *wire.Frame, ds []*wire.Datagram) {
			ds[1].SetAddress(wire.PhysicalAddress(0, 0x0134))
		}), answerMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var f wire.Frame
			if err := f.Decode(c.frame); err != nil {
				t.Fatalf("test frame does not decode: %v", err)
			}
			if got := answers(sent, &f); got != c.want {
				t.Errorf("answers = %d, want %d", got, c.want)
			}
		})
	}
}

// TestAnswersRefusesACountTakenAway: no slave decrements a working
// counter, so an answer below what was sent is not the segment's.
func TestAnswersRefusesACountTakenAway(t *testing.T) {
	src := [6]byte{0x02, 0xec, 0xa7, 0, 0, 1}
	var b wire.Builder
	if err := b.Reset(make([]byte, wire.MaxFrameLen), broadcastMAC, src); err != nil {
		t.Fatal(err)
	}
	_, _ = b.Append(wire.FPRD, 1, wire.PhysicalAddress(0x1001, 0x0130), 2)
	sent := bytes.Clone(b.Bytes())
	withWKC := func(frame []byte, wkc uint16) []byte {
		return mutated(t, frame, func(d *wire.Datagram) { d.SetWKC(wkc) })
	}
	sent = withWKC(sent, 3)
	for wkc, want := range map[uint16]int{2: answerMismatch, 3: answerTaken, 4: answerTaken} {
		var f wire.Frame
		if err := f.Decode(withWKC(sent, wkc)); err != nil {
			t.Fatal(err)
		}
		if got := answers(sent, &f); got != want {
			t.Errorf("sent WKC 3, answered %d: %d, want %d", wkc, got, want)
		}
	}
}

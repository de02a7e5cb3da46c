package wire

import (
	"testing"
)

// FuzzDecode checks that decoding arbitrary bytes never panics, that an
// error always comes with no datagrams, and that a frame that decodes can be
// rebuilt datagram by datagram into the same bytes.
func FuzzDecode(f *testing.F) {
	for _, frames := range realFrames(f) {
		for i, b := range frames {
			if i%16 == 0 {
				f.Add(b)
			}
		}
	}
	f.Add(frameWith(0))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := Validate(b)
		if err != nil {
			if n != 0 {
				t.Fatalf("error %v with %d datagrams", err, n)
			}
			return
		}
		var fr Frame
		if err := fr.Decode(b); err != nil {
			t.Fatalf("Validate ok but Decode: %v", err)
		}
		var bl Builder
		buf := make([]byte, MaxFrameLen+64)
		var dst, src [6]byte
		copy(dst[:], fr.Destination())
		copy(src[:], fr.Source())
		if err := bl.Reset(buf, dst, src); err != nil {
			t.Fatal(err)
		}
		it := fr.Datagrams()
		var d Datagram
		count := 0
		for it.Next(&d) {
			data, err := bl.Append(d.Command, d.Index, d.Address, len(d.Data))
			if err != nil {
				return // tagged or oversized frames need not rebuild
			}
			copy(data, d.Data)
			count++
		}
		if count != n {
			t.Fatalf("iterated %d datagrams, Validate said %d", count, n)
		}
		var again Frame
		if err := again.Decode(bl.Bytes()); err != nil {
			t.Fatalf("rebuilt frame does not decode: %v", err)
		}
		if m, err := Validate(bl.Bytes()); err != nil || m != n {
			t.Fatalf("rebuilt frame: %d, %v; want %d", m, err, n)
		}
	})
}

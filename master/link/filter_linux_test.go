//go:build linux

package link

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// The raw socket's kernel side: its counters (PACKET_STATISTICS) and its
// filter (Config.OwnFramesOnly).

// TestRawSocketStats: a receive queue too small for a burst keeps some
// frames and drops the others; Stats counts every frame that reached the
// socket (Packets) and, exactly, those that did not fit (Drops): the
// burst less the frames read. It allocates nothing, so the cycle may
// read it.
func TestRawSocketStats(t *testing.T) {
	v := newVeth(t)
	cfg := DefaultConfig()
	cfg.RecvBufferSize = 1 // the kernel's minimum: a few frames
	a, b := v.openPair(t, cfg)
	before, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	const sent = 200
	frame := testFrame(MaxFrameSize-4, b.HardwareAddr(), a.HardwareAddr(), 0)
	for i := range sent {
		if err := a.Send(frame); err != nil {
			t.Fatalf("Send #%d: %v", i, err)
		}
	}
	// Once the socket has counted every frame, what is not queued was
	// dropped.
	waitPackets(t, b, before.Packets+sent)
	read := 0
	buf := make([]byte, MaxFrameSize)
	for {
		n, _, err := b.Poll(buf)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		read++
	}
	after, err := b.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if got := after.Packets - before.Packets; got != sent {
		t.Errorf("Stats().Packets grew by %d, want %d", got, sent)
	}
	if got := after.Drops - before.Drops; got == 0 || got != uint64(sent-read) {
		t.Errorf("Stats().Drops grew by %d with %d of %d frames read, want %d (and some)", got, read, sent, sent-read)
	}
	if again, err := b.Stats(); err != nil || again != after {
		t.Errorf("Stats() again = %+v, %v; want the same sums %+v", again, err, after)
	}
	if !raceEnabled {
		if allocs := testing.AllocsPerRun(100, func() { _, _ = b.Stats() }); allocs != 0 {
			t.Errorf("Stats allocates %v times", allocs)
		}
	}
	b.Close()
	if got, err := b.Stats(); !errors.Is(err, ErrClosed) || got != after {
		t.Errorf("Stats after Close = %+v, %v; want %+v and ErrClosed", got, err, after)
	}
}

// waitPackets waits until s has counted packets frames (Stats.Packets):
// the kernel has queued or dropped each of them.
func waitPackets(tb testing.TB, s *RawSocket, packets uint64) {
	tb.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		st, err := s.Stats()
		if err != nil {
			tb.Fatal(err)
		}
		if st.Packets >= packets {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d frames counted in 5 s, want %d", st.Packets, packets)
		}
		time.Sleep(time.Millisecond) // polling a counter, not synchronising
	}
}

// TestRawSocketOwnFramesOnly: with Config.OwnFramesOnly the kernel passes
// exactly the EtherCAT frames that wire.FromSegment takes for the
// segment's (the socket's own address, the bit ESC port 0 sets either
// way) and drops the others before they are queued: Stats counts the
// frames passed, and the sender's count less that is what the filter
// dropped. Without it every EtherCAT frame reaches the socket.
func TestRawSocketOwnFramesOnly(t *testing.T) {
	v := newVeth(t)
	sender := v.open(t, v.ifB, SegmentConfig())
	master := v.open(t, v.ifA, DefaultConfig())
	plain := v.open(t, v.ifA, SegmentConfig())
	if !master.OwnFramesOnly() || plain.OwnFramesOnly() {
		t.Fatalf("OwnFramesOnly() = %v and %v, want true and false", master.OwnFramesOnly(), plain.OwnFramesOnly())
	}
	own := [6]byte(master.HardwareAddr())
	with := func(f func(a *[6]byte)) [6]byte { a := own; f(&a); return a }
	sources := []struct {
		name string
		src  [6]byte
	}{
		{"own", own},
		{"own, bit 0x02 set", with(func(a *[6]byte) { a[0] |= 0x02 })},
		{"own, bit 0x02 clear", with(func(a *[6]byte) { a[0] &^= 0x02 })},
		{"own, group bit set", with(func(a *[6]byte) { a[0] ^= 0x01 })},
		{"own, another high bit", with(func(a *[6]byte) { a[0] ^= 0x80 })},
		{"last byte differs", with(func(a *[6]byte) { a[5] ^= 0x01 })},
		{"fourth byte differs", with(func(a *[6]byte) { a[3] ^= 0x10 })},
		{"fifth byte differs", with(func(a *[6]byte) { a[4] ^= 0x10 })},
		{"a stranger", [6]byte{0x02, 0x00, 0x5e, 0x10, 0x20, 0x30}},
	}
	before, _ := master.Stats()
	plainBefore, _ := plain.Stats()
	const copies = 7
	passed, sent := 0, 0
	var want [][]byte
	for i, src := range sources {
		frame := testFrame(MinFrameSize, net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, src.src[:], byte(i))
		if wire.FromSegment(src.src[:], own[:]) != (i < 3) {
			t.Fatalf("%s: wire.FromSegment = %v", src.name, !(i < 3))
		}
		for range copies {
			if err := sender.Send(frame); err != nil {
				t.Fatal(err)
			}
			sent++
			if i < 3 {
				passed++
				want = append(want, frame)
			}
		}
	}
	// Another EtherType from the socket's own address: the binding and the
	// filter both refuse it.
	other := testFrame(MinFrameSize, net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, own[:], 0x77)
	binary.BigEndian.PutUint16(other[12:], 0x0800)
	if err := sender.Send(other); err != nil {
		t.Fatal(err)
	}
	// The unfiltered socket sees every EtherCAT frame; once it has counted
	// them, the kernel has offered each to the filtered one too.
	waitPackets(t, plain, plainBefore.Packets+uint64(sent))
	buf := make([]byte, MaxFrameSize)
	for i, w := range want {
		n, _, err := master.Poll(buf)
		if n == 0 && err == nil {
			t.Fatalf("frame %d of %d to pass not queued", i, len(want))
		}
		if err != nil {
			t.Fatalf("frame %d of %d passed: %v", i, len(want), err)
		}
		if !bytes.Equal(buf[:n], w) {
			t.Fatalf("frame %d: received %x, want %x", i, buf[:n], w)
		}
	}
	if n, _, err := master.Poll(buf); n != 0 || err != nil {
		t.Errorf("after the frames passed: %x, %v; want nothing more", buf[:n], err)
	}
	after, _ := master.Stats()
	plainAfter, _ := plain.Stats()
	if got := after.Packets - before.Packets; got != uint64(passed) || after.Drops != before.Drops {
		t.Errorf("%d frames reached the filtered socket (%d dropped), want %d", got, after.Drops-before.Drops, passed)
	}
	if got := plainAfter.Packets - plainBefore.Packets; got != uint64(sent) {
		t.Errorf("%d EtherCAT frames reached the unfiltered socket, want %d", got, sent)
	}
	t.Logf("%d EtherCAT frames sent, %d passed the filter, %d dropped by it", sent, passed, sent-passed)
}

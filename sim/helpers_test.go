package sim

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

func fmtf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// dg describes a datagram to send.
type dg struct {
	cmd  wire.Command
	addr uint32
	data []byte
}

func phys(cmd wire.Command, adp, ado uint16, data []byte) dg {
	return dg{cmd, wire.PhysicalAddress(adp, ado), data}
}

func logical(cmd wire.Command, addr uint32, data []byte) dg { return dg{cmd, addr, data} }

// frameOf builds a frame holding the datagrams.
func frameOf(tb testing.TB, dgs ...dg) []byte {
	tb.Helper()
	buf := make([]byte, wire.MaxFrameLen)
	var b wire.Builder
	if err := b.Reset(buf, [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, [6]byte{0x00, 0x11, 0x22, 0x33, 0x44, 0x55}); err != nil {
		tb.Fatal(err)
	}
	for i, d := range dgs {
		if err := b.AppendData(d.cmd, uint8(i), d.addr, d.data); err != nil {
			tb.Fatal(err)
		}
	}
	return append([]byte(nil), b.Bytes()...)
}

// exchange sends the datagrams through seg and returns the answers.
func exchange(tb testing.TB, seg *Segment, dgs ...dg) []wire.Datagram {
	tb.Helper()
	f := frameOf(tb, dgs...)
	if !seg.Process(f) {
		tb.Fatalf("frame not processed")
	}
	if f[6]&0x02 == 0 {
		tb.Fatalf("answer without bit 1 of the source MAC set")
	}
	return datagrams(f)
}

// one sends a single datagram and returns its answer.
func one(tb testing.TB, seg *Segment, d dg) wire.Datagram {
	tb.Helper()
	return exchange(tb, seg, d)[0]
}

func le16b(v uint16) []byte { return binary.LittleEndian.AppendUint16(nil, v) }

// frameStep is the time each frame takes on the clock of newSeg's
// segments: longer than any device's controller or EEPROM takes, so a
// test can count frames, and independent of the host.
const frameStep = 2_000_000

// newSeg builds a segment of the named devices. Unless opts give it a
// clock, its time advances by frameStep with every frame.
func newSeg(tb testing.TB, specs []string, opts ...Option) *Segment {
	tb.Helper()
	devs, err := ParseDevices(specs)
	if err != nil {
		tb.Fatal(err)
	}
	return frameClocked(NewSegment(devs, opts...))
}

// frameClocked makes seg's time advance by frameStep with every frame,
// unless it has a clock of its own (WithClock).
func frameClocked(seg *Segment) *Segment {
	if seg.opts.clock == nil {
		seg.now = func() int64 { return int64(seg.frame) * frameStep }
	}
	return seg
}

// address gives the devices station addresses 0x1001, 0x1002, … as masters do.
func address(tb testing.TB, seg *Segment) {
	tb.Helper()
	for i := range seg.Devices() {
		if d := one(tb, seg, phys(wire.APWR, wire.PositionADP(i), 0x0010, le16b(0x1001+uint16(i)))); d.WKC != 1 {
			tb.Fatalf("APWR station address of device %d: WKC %d", i, d.WKC)
		}
	}
}

// readSII reads n bytes of device adp's EEPROM through its registers,
// polling the busy bit.
func readSII(tb testing.TB, seg *Segment, adp uint16, n int) []byte {
	tb.Helper()
	var out []byte
	st := one(tb, seg, phys(wire.FPRD, adp, 0x0502, make([]byte, 2)))
	size := 4 // bytes per read: 0x0502 bit 6 says 8
	if st.Data[0]&0x40 != 0 {
		size = 8
	}
	for w := 0; len(out) < n; w += size / 2 {
		cmd := append(le16b(0x0100), binary.LittleEndian.AppendUint32(nil, uint32(w))...)
		if d := one(tb, seg, phys(wire.FPWR, adp, 0x0502, cmd)); d.WKC != 1 {
			tb.Fatalf("EEPROM command: WKC %d", d.WKC)
		}
		for polls := 0; ; polls++ {
			st := one(tb, seg, phys(wire.FPRD, adp, 0x0502, make([]byte, 2)))
			ctl := binary.LittleEndian.Uint16(st.Data)
			if ctl&0x2000 != 0 {
				tb.Fatalf("EEPROM read at word %#x failed: %#04x", w, ctl)
			}
			if ctl&0x8000 == 0 {
				break
			}
			if polls > 10 {
				tb.Fatal("EEPROM busy for ever")
			}
		}
		d := one(tb, seg, phys(wire.FPRD, adp, 0x0508, make([]byte, size)))
		out = append(out, d.Data...)
	}
	return out[:n]
}

package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// clockedSeg is a segment of the named devices, addressed from 0x1001, on
// a clock the test sets (ns).
func clockedSeg(tb testing.TB, specs []string, opts ...Option) (*Segment, *int64) {
	tb.Helper()
	now := new(int64)
	seg := newSeg(tb, specs, append(opts, WithClock(func() int64 { return *now }))...)
	address(tb, seg)
	return seg, now
}

func siiStatus(tb testing.TB, seg *Segment, adp uint16) uint16 {
	tb.Helper()
	return binary.LittleEndian.Uint16(one(tb, seg, phys(wire.FPRD, adp, 0x0502, make([]byte, 2))).Data)
}

// siiCommand writes control value ctl with word address addr (and data
// for a write) to 0x0502–0x0509.
func siiCommand(tb testing.TB, seg *Segment, adp, ctl uint16, addr uint32, data ...byte) {
	tb.Helper()
	b := binary.LittleEndian.AppendUint16(nil, ctl)
	b = binary.LittleEndian.AppendUint32(b, addr)
	b = append(b, data...)
	if d := one(tb, seg, phys(wire.FPWR, adp, 0x0502, b)); d.WKC != 1 {
		tb.Fatalf("SII command %#04x: WKC %d", ctl, d.WKC)
	}
}

// TestSIIReadTakesTimeNotFrames: an ET1100/ET1200 read stays busy for its
// read time however often the master polls, and no longer however seldom.
func TestSIIReadTakesTimeNotFrames(t *testing.T) {
	for _, name := range []string{"EK1100", "EL1004"} { // ET1100, ET1200
		for _, polls := range []int{1, 3, 50} {
			seg, now := clockedSeg(t, []string{name})
			*now = 1_000_000
			siiCommand(t, seg, 0x1001, esc.SIICmdRead, 0)
			step := (siiI2C.read.typ - 1) / int64(polls)
			for i := 1; i <= polls; i++ {
				*now = 1_000_000 + int64(i)*step
				if st := siiStatus(t, seg, 0x1001); st&esc.SIIBusy == 0 {
					t.Fatalf("%s: idle %d ns after the read command (%d polls), want busy for %d ns", name, int64(i)*step, polls, siiI2C.read.typ)
				}
			}
			*now = 1_000_000 + siiI2C.read.typ
			if st := siiStatus(t, seg, 0x1001); st&esc.SIIBusy != 0 {
				t.Fatalf("%s: busy %d ns after the read command, want done", name, siiI2C.read.typ)
			}
			got := one(t, seg, phys(wire.FPRD, 0x1001, 0x0508, make([]byte, 8))).Data
			if want := seg.Devices()[0].SII()[:8]; string(got) != string(want) {
				t.Errorf("%s: read % x, want % x", name, got, want)
			}
		}
	}
}

// TestSIIWriteCycle: a write reports idle at once; until the EEPROM's write
// cycle ends every command is refused with 0x0502 bit 13 and has no effect;
// then commands work again.
func TestSIIWriteCycle(t *testing.T) {
	seg, now := clockedSeg(t, []string{"EL2004"})
	*now = 5_000_000
	siiCommand(t, seg, 0x1001, esc.SIICmdWrite|esc.SIIWriteEnable, 0x40, 0xAB, 0xCD)
	if st := siiStatus(t, seg, 0x1001); st&(esc.SIIBusy|esc.SIICommandError) != 0 {
		t.Fatalf("0x0502 = %#04x right after a write, want idle without error", st)
	}
	*now += siiI2C.writeCycle - 1
	siiCommand(t, seg, 0x1001, esc.SIICmdRead, 0x40)
	if st := siiStatus(t, seg, 0x1001); st&esc.SIICommandError == 0 || st&esc.SIIBusy != 0 {
		t.Fatalf("0x0502 = %#04x after a read within the write cycle, want bit 13 and not busy", st)
	}
	*now++
	siiCommand(t, seg, 0x1001, esc.SIICmdRead, 0x40)
	*now += siiI2C.read.typ
	if st := siiStatus(t, seg, 0x1001); st&(esc.SIIBusy|esc.SIICommandError) != 0 {
		t.Fatalf("0x0502 = %#04x after the write cycle, want idle without error", st)
	}
	if got := one(t, seg, phys(wire.FPRD, 0x1001, 0x0508, make([]byte, 2))).Data; got[0] != 0xAB || got[1] != 0xCD {
		t.Errorf("read back % x, want ab cd", got)
	}
}

// TestSIIChecksumBitFollowsReload: writing a configuration word leaves the
// checksum error bit as the last load left it; a reload checks it anew.
func TestSIIChecksumBitFollowsReload(t *testing.T) {
	seg, now := clockedSeg(t, []string{"EL2004"})
	img := seg.Devices()[0].SII()
	siiCommand(t, seg, 0x1001, esc.SIICmdWrite|esc.SIIWriteEnable, 0x04, img[8]^0xFF, img[9])
	if st := siiStatus(t, seg, 0x1001); st&esc.SIIChecksumError != 0 {
		t.Fatalf("0x0502 = %#04x after writing word 4, want no checksum error before a reload", st)
	}
	*now += siiI2C.writeCycle
	siiCommand(t, seg, 0x1001, esc.SIICmdReload, 0)
	*now += siiI2C.read.typ
	if st := siiStatus(t, seg, 0x1001); st&esc.SIIChecksumError == 0 {
		t.Errorf("0x0502 = %#04x after reloading a changed configuration area, want bit 11", st)
	}
}

// TestSIIBusyFramesStillCountFrames keeps WithSIIBusyFrames counting frames.
func TestSIIBusyFramesStillCountFrames(t *testing.T) {
	seg, now := clockedSeg(t, []string{"EL2004"}, WithSIIBusyFrames(2))
	siiCommand(t, seg, 0x1001, esc.SIICmdRead, 0)
	*now += 1e9
	for i := range 2 {
		if st := siiStatus(t, seg, 0x1001); st&esc.SIIBusy == 0 {
			t.Fatalf("idle at poll %d, want busy for 2 frames", i+1)
		}
	}
	if st := siiStatus(t, seg, 0x1001); st&esc.SIIBusy != 0 {
		t.Fatalf("busy at poll 3, want done after 2 frames")
	}
}

func TestSIIReadSizeFollowsControlBit6(t *testing.T) {
	for _, c := range []struct {
		idle uint16
		want int
	}{{0x0040, 8}, {0x0000, 4}} {
		e := eepromInterface{idle: c.idle}
		if n := e.readBytes(); n != c.want {
			t.Errorf("idle %#04x: %d bytes per read, want %d", c.idle, n, c.want)
		}
	}
}

package sim

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

func configSM(tb testing.TB, seg *Segment, adp uint16, i int, start, length uint16, control uint8) {
	tb.Helper()
	b := make([]byte, esc.SyncManagerLen)
	esc.SyncManager{PhysicalStart: start, Length: length, Control: control, Activate: esc.SMActivateOn}.Encode(b)
	if d := one(tb, seg, phys(wire.FPWR, adp, uint16(esc.RegSyncManager(i)), b)); d.WKC != 1 {
		tb.Fatalf("SM%d of %#04x: WKC %d", i, adp, d.WKC)
	}
}

func configFMMU(tb testing.TB, seg *Segment, adp uint16, i int, f esc.FMMU) {
	tb.Helper()
	b := make([]byte, esc.FMMULen)
	f.Encode(b)
	if d := one(tb, seg, phys(wire.FPWR, adp, uint16(esc.RegFMMU(i)), b)); d.WKC != 1 {
		tb.Fatalf("FMMU%d of %#04x: WKC %d", i, adp, d.WKC)
	}
}

// referenceLine configures the reference set the way SOEM maps it: two
// EL2004 sharing logical byte 0 (bits 0–3 and 4–7), two EL1014 sharing
// logical byte 1, the EL4132's 4 output bytes at logical 2.
func referenceLine(tb testing.TB, opts ...Option) *Segment {
	tb.Helper()
	seg := newSeg(tb, []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}, opts...)
	address(tb, seg)
	for i, adp := range []uint16{0x1002, 0x1003} {
		configSM(tb, seg, adp, 0, 0x0F00, 1, 0x44)
		configFMMU(tb, seg, adp, 0, esc.ForBits(uint64(4*i), 4, 0x0F00, 0, esc.FMMUWrite))
	}
	for i, adp := range []uint16{0x1004, 0x1005} {
		configSM(tb, seg, adp, 0, 0x1000, 1, 0x00)
		configFMMU(tb, seg, adp, 0, esc.ForBits(uint64(8+4*i), 4, 0x1000, 0, esc.FMMURead))
	}
	configSM(tb, seg, 0x1006, 2, 0x1100, 4, 0x64)
	configFMMU(tb, seg, 0x1006, 0, esc.ForBits(16, 32, 0x1100, 0, esc.FMMUWrite))
	return seg
}

func TestLogicalBitSharing(t *testing.T) {
	seg := referenceLine(t)
	devs := seg.Devices()
	devs[3].SetInputs([]byte{0x05}) // first EL1014: channels 1 and 3
	devs[4].SetInputs([]byte{0x0A}) // second: channels 2 and 4
	// The analog terminal only takes outputs in SAFEOP: bring it there.
	for _, st := range []uint16{0x0002, 0x0004} {
		if st == 0x0002 {
			configSM(t, seg, 0x1006, 0, 0x1000, 0x80, 0x26)
			configSM(t, seg, 0x1006, 1, 0x1080, 0x80, 0x22)
		}
		one(t, seg, phys(wire.FPWR, 0x1006, 0x0120, le16b(st)))
		for range 3 {
			one(t, seg, phys(wire.NOP, 0, 0, []byte{0}))
		}
	}
	if s, c := devs[5].ALStatus(); s.State != esc.StateSafeOp || s.Error {
		t.Fatalf("EL4132 in %v (%v)", s, c)
	}

	out := []byte{0xA6, 0xFF, 0x34, 0x12, 0xCD, 0xAB}
	got := one(t, seg, logical(wire.LRW, 0, out))
	// 2 EL2004 (+2 each), 2 EL1014 (+1 each, counted as reads), EL4132 (+2).
	if got.WKC != 2+2+1+1+2 {
		t.Errorf("LRW WKC %d, want 8", got.WKC)
	}
	if want := []byte{0xA6, 0xA5, 0x34, 0x12, 0xCD, 0xAB}; !bytes.Equal(got.Data, want) {
		t.Errorf("LRW data % x, want % x (inputs 0x5 and 0xA in byte 1, upper bits passed through)", got.Data, want)
	}
	for i, want := range [][]byte{{0x06}, {0x0A}} {
		if o := devs[1+i].Outputs(); !bytes.Equal(o, want) {
			t.Errorf("EL2004 #%d outputs % x, want % x", i+1, o, want)
		}
	}
	if o := devs[5].Outputs(); !bytes.Equal(o, []byte{0x34, 0x12, 0xCD, 0xAB}) {
		t.Errorf("EL4132 outputs % x", o)
	}

	// LRD reads inputs only; LWR writes outputs only.
	if d := one(t, seg, logical(wire.LRD, 0, make([]byte, 6))); d.WKC != 2 || d.Data[1] != 0xA5 || d.Data[0] != 0 {
		t.Errorf("LRD: WKC %d data % x", d.WKC, d.Data)
	}
	if d := one(t, seg, logical(wire.LWR, 0, []byte{0x0F, 0, 0, 0, 0, 0})); d.WKC != 3 {
		t.Errorf("LWR: WKC %d, want 3", d.WKC)
	}
	// Unmapped logical space: nobody answers, the data passes unchanged.
	if d := one(t, seg, logical(wire.LRW, 0x100, []byte{1, 2, 3})); d.WKC != 0 || !bytes.Equal(d.Data, []byte{1, 2, 3}) {
		t.Errorf("unmapped LRW: WKC %d data % x", d.WKC, d.Data)
	}
	// A datagram covering only part of the EL4132's 4-byte buffer does not
	// complete it: the outputs keep the last complete write.
	one(t, seg, logical(wire.LWR, 2, []byte{0x99, 0x99}))
	if o := devs[5].Outputs(); !bytes.Equal(o, []byte{0, 0, 0, 0}) {
		t.Errorf("EL4132 outputs after a partial write % x, want the last complete write (zeros)", o)
	}
}

func TestProcessDataNeedsSafeOpOnApplicationControllers(t *testing.T) {
	seg := referenceLine(t)
	// The EL4132 is in INIT: its application keeps the output SyncManager
	// deactivated, so its FMMU does not count.
	if d := one(t, seg, logical(wire.LWR, 2, make([]byte, 4))); d.WKC != 0 {
		t.Errorf("LWR to an EL4132 in INIT: WKC %d, want 0", d.WKC)
	}
	// The EL2004 (device emulation) takes outputs whatever its state.
	if d := one(t, seg, logical(wire.LWR, 0, []byte{0x01})); d.WKC != 2 {
		t.Errorf("LWR to two EL2004 in INIT: WKC %d, want 2", d.WKC)
	}
}

func TestInputPatterns(t *testing.T) {
	tests := []struct {
		pattern Pattern
		want    []byte // EL1004 input byte after cycles 1, 2, 3, 4
	}{
		{Pattern{Kind: PatternCounter}, []byte{0x0, 0x1, 0x2, 0x3}},
		{Pattern{Kind: PatternWalkingBit}, []byte{0x1, 0x2, 0x4, 0x8}},
		{Pattern{Kind: PatternSquare, Period: 4}, []byte{0xF, 0xF, 0x0, 0x0}},
		{Pattern{Kind: PatternConstant}, []byte{0x0, 0x0, 0x0, 0x0}},
	}
	for _, tt := range tests {
		t.Run(tt.pattern.String(), func(t *testing.T) {
			seg := newSeg(t, []string{"EL1004"}, WithInputPattern(tt.pattern))
			address(t, seg)
			configSM(t, seg, 0x1001, 0, 0x1000, 1, 0x00)
			configFMMU(t, seg, 0x1001, 0, esc.ForBits(0, 8, 0x1000, 0, esc.FMMURead))
			var got []byte
			for range tt.want {
				got = append(got, one(t, seg, logical(wire.LRD, 0, []byte{0})).Data[0])
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("inputs % x, want % x", got, tt.want)
			}
		})
	}
	// An analog sine stays within the model's range and moves.
	seg := newSeg(t, []string{"EL3204"}, WithInputPattern(Pattern{Kind: PatternSine, Period: 8}))
	d := seg.Devices()[0]
	seen := map[int16]bool{}
	for range 8 {
		seg.Process(frameOf(t, logical(wire.LRD, 0x1000, []byte{0})))
		v := int16(binary.LittleEndian.Uint16(d.Register(0x1182, 2)))
		if v < -500 || v > 2500 {
			t.Errorf("sine value %d outside the EL3204's range", v)
		}
		seen[v] = true
	}
	if len(seen) < 4 {
		t.Errorf("sine took only %d values in a period", len(seen))
	}
}

func TestParsePattern(t *testing.T) {
	for in, want := range map[string]Pattern{
		"counter": {Kind: PatternCounter, Period: 100}, "walk": {Kind: PatternWalkingBit, Period: 100},
		"square:10": {Kind: PatternSquare, Period: 10}, "sine": {Kind: PatternSine, Period: 100},
	} {
		if got, err := ParsePattern(in); err != nil || got != want {
			t.Errorf("ParsePattern(%q) = %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "zigzag", "square:1", "counter:3", "sine:x"} {
		if _, err := ParsePattern(bad); err == nil {
			t.Errorf("ParsePattern(%q) accepted", bad)
		}
	}
}

// TestLogicalRunAcrossSyncManagers maps one FMMU over a write buffer, a
// stretch of plain RAM and a read buffer: the run of whole bytes is split
// where each begins and ends, and each part keeps its own rules (the
// write buffer is not read, RAM is written and read back, the read buffer
// is not written and gives its inputs).
func TestLogicalRunAcrossSyncManagers(t *testing.T) {
	seg := newSeg(t, []string{"EL2004"})
	address(t, seg)
	configSM(t, seg, 0x1001, 0, 0x1100, 4, 0x64) // written by the master, buffered
	configSM(t, seg, 0x1001, 1, 0x1108, 4, 0x20) // read by the master, buffered
	configFMMU(t, seg, 0x1001, 0, esc.ForBits(0, 96, 0x1100, 0, esc.FMMURead|esc.FMMUWrite))
	out := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	got := one(t, seg, logical(wire.LRW, 0, out))
	if got.WKC != 3 {
		t.Errorf("LRW WKC %d, want 3 (read and write)", got.WKC)
	}
	if want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 0, 0, 0, 0}; !bytes.Equal(got.Data, want) {
		t.Errorf("LRW data % x, want % x", got.Data, want)
	}
	if o := seg.Devices()[0].Outputs(); !bytes.Equal(o, []byte{0x01}) {
		t.Errorf("outputs % x, want 01: the whole write buffer was written, so it completes", o)
	}
	if d := one(t, seg, phys(wire.FPRD, 0x1001, 0x1104, make([]byte, 4))); d.WKC != 1 || !bytes.Equal(d.Data, []byte{5, 6, 7, 8}) {
		t.Errorf("RAM between the buffers: WKC %d, % x; want 05 06 07 08", d.WKC, d.Data)
	}
	// A run that starts inside the write buffer does not complete it.
	one(t, seg, logical(wire.LWR, 2, []byte{0xEE, 0xEE, 0xEE}))
	if o := seg.Devices()[0].Outputs(); !bytes.Equal(o, []byte{0x01}) {
		t.Errorf("outputs % x after a partial write, want the last complete one (01)", o)
	}
}

// putBits stores the low n bits of v from any bit, little-endian, and
// leaves the bits around them alone.
func TestPutBits(t *testing.T) {
	for _, c := range []struct {
		at, n int
		v     uint64
		want  []byte // bytes 0x1000.. after the store into 0xFF fill
	}{
		{0, 1, 0, []byte{0xFE, 0xFF}},
		{3, 2, 0b01, []byte{0xEF, 0xFF}},
		{6, 4, 0b0110, []byte{0xBF, 0xFD}},
		{8, 16, 0x1234, []byte{0xFF, 0x34, 0x12, 0xFF}},
		{4, 16, 0xA5C3, []byte{0x3F, 0x5C, 0xFA, 0xFF}},
		{0, 64, 0x0102030405060708, []byte{8, 7, 6, 5, 4, 3, 2, 1, 0xFF}},
	} {
		d := newSeg(t, []string{"EL2004"}).Devices()[0]
		for i := range 16 {
			d.mem.b[0x1000+i] = 0xFF
		}
		d.putBits(0x1000*8+c.at, c.n, c.v)
		if got := d.mem.b[0x1000 : 0x1000+len(c.want)]; !bytes.Equal(got, c.want) {
			t.Errorf("putBits(%d, %d, %#x) = % x, want % x", c.at, c.n, c.v, got, c.want)
		}
	}
	d := newSeg(t, []string{"EL2004"}).Devices()[0]
	d.putBits(len(d.mem.b)*8-4, 8, 0xFF) // runs off the end: the part inside is stored
	if d.mem.b[len(d.mem.b)-1] != 0xF0 {
		t.Errorf("last byte %#x, want 0xf0", d.mem.b[len(d.mem.b)-1])
	}
}

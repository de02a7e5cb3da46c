package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// download writes data (1 to 4 bytes, expedited) to index:sub of device
// 0x1001 and returns the abort code, or 0 when the device took it.
func download(tb testing.TB, seg *Segment, index uint16, sub uint8, v uint32, size int) uint32 {
	tb.Helper()
	req := []byte{0x23 | byte(4-size)<<2, byte(index), byte(index >> 8), sub, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(req[4:], v)
	r := sdo(tb, seg, 0x1001, req)
	switch r[2] {
	case 0x60:
		return 0
	case 0x80:
		return binary.LittleEndian.Uint32(r[6:])
	}
	tb.Fatalf("download %#04x:%02x: reply % x", index, sub, r)
	return 0
}

// pdoWrite is one SDO download of a PDO test: index:sub = v, size bytes.
type pdoWrite struct {
	index uint16
	sub   uint8
	v     uint32
	size  int
}

// u8w, u16w and u32w build writes of sub-index 0 counts, assignment
// entries and mapping entries.
func u8w(index uint16, sub uint8, v uint32) pdoWrite  { return pdoWrite{index, sub, v, 1} }
func u16w(index uint16, sub uint8, v uint32) pdoWrite { return pdoWrite{index, sub, v, 2} }
func u32w(index uint16, sub uint8, v uint32) pdoWrite { return pdoWrite{index, sub, v, 4} }

// preOp brings device 0x1001 of seg to PREOP with its mailbox running.
func preOp(tb testing.TB, seg *Segment) {
	tb.Helper()
	address(tb, seg)
	mailboxSMs(tb, seg, 0x1001)
	if st, code := request(tb, seg, 0x1001, 0x02); st != 0x02 {
		tb.Fatalf("PREOP: %#04x %v", st, code)
	}
}

// TestPDORemapLayout remaps the EL3004's compact PDO 0x1A01 in PREOP,
// assigns it alone, and checks that the device's process data, its SDO
// view of the values and the SAFEOP check follow the new mapping.
func TestPDORemapLayout(t *testing.T) {
	seg := newSeg(t, []string{"EL3004"})
	preOp(t, seg)
	for _, w := range []pdoWrite{
		u8w(0x1C13, 0, 0),
		u8w(0x1A01, 0, 0),
		u32w(0x1A01, 1, 0x60101110), // channel 2 value
		u32w(0x1A01, 2, 0x60000101), // channel 1 underrange
		u32w(0x1A01, 3, 0x60000201), // channel 1 overrange
		u32w(0x1A01, 4, 0x0000000E), // 14 bits gap
		u32w(0x1A01, 5, 0x60001110), // channel 1 value
		u8w(0x1A01, 0, 5),
		u16w(0x1C13, 1, 0x1A01),
		u8w(0x1C13, 0, 1),
	} {
		if code := download(t, seg, w.index, w.sub, w.v, w.size); code != 0 {
			t.Fatalf("%#04x:%02x = %#x: abort %#08x", w.index, w.sub, w.v, code)
		}
	}
	d := seg.Devices()[0]
	if n := d.InputSize(); n != 6 {
		t.Fatalf("InputSize() = %d, want 6 (48 bits)", n)
	}
	d.SetInputs([]byte{0x34, 0x12, 0x02, 0x00, 0x78, 0x56})
	upload := func(index uint16, sub uint8) uint32 {
		r := sdo(t, seg, 0x1001, []byte{0x40, byte(index), byte(index >> 8), sub, 0, 0, 0, 0})
		if r[2]&0xF3 != 0x43 {
			t.Fatalf("upload %#04x:%02x: reply % x", index, sub, r)
		}
		return binary.LittleEndian.Uint32(r[6:])
	}
	for _, c := range []struct {
		index uint16
		sub   uint8
		want  uint32
	}{{0x6010, 0x11, 0x1234}, {0x6000, 1, 0}, {0x6000, 2, 1}, {0x6000, 0x11, 0x5678}, {0x1A01, 0, 5}, {0x1A01, 5, 0x60001110}} {
		if got := upload(c.index, c.sub); got != c.want {
			t.Errorf("%#04x:%02x = %#x, want %#x", c.index, c.sub, got, c.want)
		}
	}
	// SAFEOP checks the input SyncManager against the new 6 bytes.
	configSM(t, seg, 0x1001, 3, 0x1180, 16, 0x20)
	if st, _ := request(t, seg, 0x1001, 0x04); st&0x10 == 0 {
		t.Errorf("SAFEOP with a 16-byte SyncManager for 6 bytes of inputs: status %#04x, want refused", st)
	}
	request(t, seg, 0x1001, 0x12) // acknowledge, back to PREOP
	configSM(t, seg, 0x1001, 3, 0x1180, 6, 0x20)
	if st, code := request(t, seg, 0x1001, 0x04); st != 0x04 {
		t.Fatalf("SAFEOP with a 6-byte SyncManager: %#04x %v", st, code)
	}
	if code := download(t, seg, 0x1A01, 0, 0, 1); code != abortDeviceState {
		t.Errorf("mapping write in SAFEOP: abort %#08x, want %#08x", code, abortDeviceState)
	}
	// The inputs as a logical read sees them.
	configFMMU(t, seg, 0x1001, 0, esc.ForBits(8*0x10000, 48, 0x1180, 0, esc.FMMURead))
	if r := one(t, seg, logical(wire.LRD, 0x10000, make([]byte, 6))); r.WKC != 1 || binary.LittleEndian.Uint16(r.Data[4:]) != 0x5678 {
		t.Errorf("LRD: WKC %d data % x", r.WKC, r.Data)
	}
}

func TestPDOWriteAborts(t *testing.T) {
	zeroMapping := u8w(0x1A01, 0, 0)
	tests := []struct {
		name   string
		device string
		writes []pdoWrite // all but the last succeed
		abort  uint32
	}{
		{"object not in any PDO", "EL3004", []pdoWrite{zeroMapping, u32w(0x1A01, 1, 0x60001210)}, abortNotMappable},
		{"output object into a TxPDO", "EL3004", []pdoWrite{zeroMapping, u32w(0x1A01, 1, 0x70000110)}, abortNotMappable},
		{"wrong bit length", "EL3004", []pdoWrite{zeroMapping, u32w(0x1A01, 1, 0x60001108)}, abortNotMappable},
		{"gap of 0 bits", "EL3004", []pdoWrite{zeroMapping, u32w(0x1A01, 1, 0)}, abortNotMappable},
		{"count over an empty entry", "EL3004", []pdoWrite{zeroMapping, u32w(0x1A01, 1, 0x60001110), u8w(0x1A01, 0, 2)}, abortNotMappable},
		{"entry while the count is not 0", "EL3004", []pdoWrite{u32w(0x1A01, 1, 0x60001110)}, abortSubIndex0NotZero},
		{"assignment entry while the count is not 0", "EL3004", []pdoWrite{u16w(0x1C13, 1, 0x1A01)}, abortSubIndex0NotZero},
		{"RxPDO assigned to the input SyncManager", "EL3004", []pdoWrite{u8w(0x1C13, 0, 0), u16w(0x1C13, 1, 0x1600)}, abortValueRange},
		{"PDO that does not exist", "EL3004", []pdoWrite{u8w(0x1C13, 0, 0), u16w(0x1C13, 1, 0x1A09)}, abortNoObject},
		{"count beyond the entries", "EL3004", []pdoWrite{u8w(0x1A01, 0, 9)}, abortValueRange},
		{"fixed mapping", "EL4008", []pdoWrite{u8w(0x1600, 0, 0)}, abortReadOnly},
		{"fixed mapping entry", "EL4008", []pdoWrite{u32w(0x1600, 1, 0x70000110)}, abortReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := newSeg(t, []string{tt.device})
			preOp(t, seg)
			for i, w := range tt.writes {
				code := download(t, seg, w.index, w.sub, w.v, w.size)
				if i < len(tt.writes)-1 {
					if code != 0 {
						t.Fatalf("%#04x:%02x = %#x: abort %#08x", w.index, w.sub, w.v, code)
					}
					continue
				}
				if code != tt.abort {
					t.Errorf("%#04x:%02x = %#x: abort %#08x, want %#08x", w.index, w.sub, w.v, code, tt.abort)
				}
			}
		})
	}
}

// tightEL3004 is an EL3004 whose SII describes one more SyncManager 16
// bytes after the input SyncManager: in 3-buffer mode that leaves room
// for 5 bytes (40 bits) of inputs.
func tightEL3004(tb testing.TB) *Segment {
	tb.Helper()
	desc := el3004(0x00150000)
	desc.SyncManagers = append(desc.SyncManagers, sii.SyncManager{StartAddress: 0x1190, Type: sii.SMUnused})
	desc.Categories = nil
	img, err := sii.Encode(desc)
	if err != nil {
		tb.Fatal(err)
	}
	if p, ok := profileByName("EL3004"); ok {
		{
			d, err := newDevice(img, p.spec)
			if err != nil {
				tb.Fatal(err)
			}
			return frameClocked(NewSegment([]*Device{d}))
		}
	}
	tb.Fatal("no EL3004 model")
	return nil
}

func TestPDOLengthAborts(t *testing.T) {
	tests := []struct {
		name   string
		writes []pdoWrite
		abort  uint32
	}{
		{"one standard PDO fits", []pdoWrite{u8w(0x1C13, 0, 0), u16w(0x1C13, 1, 0x1A00), u8w(0x1C13, 0, 1)}, 0},
		{"two standard PDOs do not", []pdoWrite{u8w(0x1C13, 0, 0), u16w(0x1C13, 1, 0x1A00), u16w(0x1C13, 2, 0x1A02),
			u8w(0x1C13, 0, 2)}, abortPDOLength},
		{"a mapping of 40 bits fits", []pdoWrite{u8w(0x1A01, 0, 0), u32w(0x1A01, 1, 0x60001110), u32w(0x1A01, 2, 0x60101110),
			u32w(0x1A01, 3, 0x00000008), u8w(0x1A01, 0, 3)}, 0},
		{"a mapping of 48 bits does not", []pdoWrite{u8w(0x1A01, 0, 0), u32w(0x1A01, 1, 0x60001110), u32w(0x1A01, 2, 0x60101110),
			u32w(0x1A01, 3, 0x60201110), u8w(0x1A01, 0, 3)}, abortPDOLength},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := tightEL3004(t)
			preOp(t, seg)
			for i, w := range tt.writes {
				code := download(t, seg, w.index, w.sub, w.v, w.size)
				want := uint32(0)
				if i == len(tt.writes)-1 {
					want = tt.abort
				}
				if code != want {
					t.Fatalf("%#04x:%02x = %#x: abort %#08x, want %#08x", w.index, w.sub, w.v, code, want)
				}
			}
		})
	}
}

// TestPDOCompleteWriteAbort checks the rules for a complete access write
// of a whole mapping or assignment.
func TestPDOCompleteWriteAbort(t *testing.T) {
	seg := newSeg(t, []string{"EL3004"})
	d := seg.Devices()[0]
	le32 := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		return b
	}
	le16 := func(vs ...uint16) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		return b
	}
	tests := []struct {
		name  string
		index uint16
		n     int
		data  []byte
		want  uint32
	}{
		{"mapping", 0x1A01, 2, le32(0x60001110, 0x60101110), 0},
		{"mapping with an unknown object", 0x1A01, 2, le32(0x60001110, 0x60001210), abortNotMappable},
		{"mapping too short", 0x1A01, 2, le32(0x60001110), abortLengthLow},
		{"assignment", 0x1C13, 2, le16(0x1A01, 0x1A03), 0},
		{"assignment of an RxPDO", 0x1C13, 1, le16(0x1600), abortValueRange},
		{"not a PDO object", 0xF008, 1, le32(1), 0},
	}
	for _, tt := range tests {
		if got := d.pdoCompleteWriteAbort(d.mbx.od, tt.index, tt.n, tt.data); got != tt.want {
			t.Errorf("%s: %#08x, want %#08x", tt.name, got, tt.want)
		}
	}
}

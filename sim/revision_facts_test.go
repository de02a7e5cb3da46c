package sim

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// The facts of issue 37 about the real devices of each revision: PDO
// mapping and assignment, chip registers, the AL control handshake and
// the send mailbox's read event. Each test is written from the fact, not
// from the model.

// preOpLine returns a segment of the named devices at 0x1001, 0x1002, …, each
// in PREOP with its SII's standard mailbox.
func preOpLine(tb testing.TB, specs ...string) *Segment {
	tb.Helper()
	seg := newSeg(tb, specs)
	address(tb, seg)
	for i := range specs {
		adp := 0x1001 + uint16(i)
		siiMailboxSMs(tb, seg, adp)
		one(tb, seg, phys(wire.FPWR, adp, 0x0120, le16b(0x02)))
	}
	for range 20 {
		one(tb, seg, phys(wire.NOP, 0, 0, []byte{0}))
	}
	for i := range specs {
		if st := alStatus(tb, seg, 0x1001+uint16(i)); st != 0x02 {
			tb.Fatalf("%s: AL status %#04x, want PREOP", specs[i], st)
		}
	}
	return seg
}

// upload reads index:sub of device adp over SDO (expedited or normal,
// through the device's own mailbox) and returns the data, or the abort
// code.
func upload(tb testing.TB, seg *Segment, adp, index uint16, sub uint8) (data []byte, abort uint32) {
	tb.Helper()
	var d *Device
	for _, x := range seg.Devices() {
		if x.StationAddress() == adp {
			d = x
		}
	}
	mb := d.sii.Header.StandardMailbox
	msg := make([]byte, mb.ReceiveSize)
	binary.LittleEndian.PutUint16(msg, 10)
	msg[5] = mbxTypeCoE // counter 0: a master that does not count, each request served
	binary.LittleEndian.PutUint16(msg[6:], coeSDORequest<<12)
	copy(msg[8:], []byte{0x40, byte(index), byte(index >> 8), sub})
	if r := one(tb, seg, phys(wire.FPWR, adp, mb.ReceiveOffset, msg)); r.WKC != 1 {
		tb.Fatalf("mailbox write: WKC %d", r.WKC)
	}
	for range 100 {
		r := one(tb, seg, phys(wire.FPRD, adp, mb.SendOffset, make([]byte, mb.SendSize)))
		if r.WKC != 1 || binary.LittleEndian.Uint16(r.Data[6:])>>12 != coeSDOResponse {
			continue
		}
		sdoPart := r.Data[8:]
		switch {
		case sdoPart[0] == 0x80:
			return nil, binary.LittleEndian.Uint32(sdoPart[4:])
		case sdoPart[0]&0x02 != 0: // expedited
			n := 4
			if sdoPart[0]&0x01 != 0 {
				n = 4 - int(sdoPart[0]>>2&3)
			}
			return append([]byte(nil), sdoPart[4:4+n]...), 0
		default:
			n := binary.LittleEndian.Uint32(sdoPart[4:])
			return append([]byte(nil), sdoPart[8:8+n]...), 0
		}
	}
	tb.Fatalf("no SDO answer for %#04x:%d", index, sub)
	return nil, 0
}

// listOf reads object index of device adp as a count at sub-index 0 and
// that many 16- or 32-bit entries.
func listOf(tb testing.TB, seg *Segment, adp, index uint16) []uint32 {
	tb.Helper()
	n, abort := upload(tb, seg, adp, index, 0)
	if abort != 0 {
		tb.Fatalf("%#04x:00: abort %#08x", index, abort)
	}
	var out []uint32
	for k := 1; k <= int(n[0]); k++ {
		v, abort := upload(tb, seg, adp, index, uint8(k))
		if abort != 0 {
			tb.Fatalf("%#04x:%02x: abort %#08x", index, k, abort)
		}
		var x uint32
		for i, b := range v {
			x |= uint32(b) << (8 * i)
		}
		out = append(out, x)
	}
	return out
}

// TestEK1914PDOs: the real EK1914's mappings and assignments.
func TestEK1914PDOs(t *testing.T) {
	seg := preOpLine(t, "EK1914")
	tx := []uint32{0x60000108, 0x60010101, 0x60010201, 0x00000006, 0x60000310, 0x60000210}
	rx := []uint32{0x70000108, 0x70010101, 0x70010201, 0x00000006, 0x70000310, 0x70000210}
	if got := listOf(t, seg, 0x1001, 0x1A00); !slices.Equal(got, tx) {
		t.Errorf("0x1A00 = %08x, want %08x", got, tx)
	}
	if got := listOf(t, seg, 0x1001, 0x1600); !slices.Equal(got, rx) {
		t.Errorf("0x1600 = %08x, want %08x", got, rx)
	}
	if got := listOf(t, seg, 0x1001, 0x1A01); len(got) != 5 {
		t.Errorf("0x1A01 has %d entries (%08x), want 5", len(got), got)
	}
	if got := listOf(t, seg, 0x1001, 0x1601); len(got) != 7 {
		t.Errorf("0x1601 has %d entries (%08x), want 7", len(got), got)
	}
	if got := listOf(t, seg, 0x1001, 0x1C12); !slices.Equal(got, []uint32{0x1600, 0x1601}) {
		t.Errorf("0x1C12 = %04x, want 1600 1601", got)
	}
	if got := listOf(t, seg, 0x1001, 0x1C13); !slices.Equal(got, []uint32{0x1A00, 0x1A01}) {
		t.Errorf("0x1C13 = %04x, want 1a00 1a01", got)
	}
}

// TestEL3004Revision15PDOs: revision 0x00150000 maps ten entries in each
// standard TxPDO, the last five pad 1, pad 6, status bits 0x0F and 0x10
// and the value.
func TestEL3004Revision15PDOs(t *testing.T) {
	seg := preOpLine(t, "EL3004@0x00150000")
	for c := range 4 {
		obj := uint32(0x6000+0x10*c) << 16
		want := []uint32{0x00000001, 0x00000006, obj | 0x0F01, obj | 0x1001, obj | 0x1110}
		got := listOf(t, seg, 0x1001, 0x1A00+2*uint16(c))
		if len(got) != 10 || !slices.Equal(got[5:], want) {
			t.Errorf("0x%04X = %08x, want 10 entries ending in %08x", 0x1A00+2*c, got, want)
		}
	}
}

// TestEL3004Revision11HasDC: revision 0x00110000 has the distributed
// clock: its system time registers answer.
func TestEL3004Revision11HasDC(t *testing.T) {
	seg := newSeg(t, []string{"EL3004@0x00110000"})
	address(t, seg)
	for _, r := range []struct{ ado, n uint16 }{{0x0910, 8}, {0x0920, 8}, {0x0928, 4}} {
		if d := one(t, seg, phys(wire.FPRD, 0x1001, r.ado, make([]byte, r.n))); d.WKC != 1 {
			t.Errorf("FPRD %#04x: WKC %d, want 1", r.ado, d.WKC)
		}
	}
	if got := seg.Devices()[0].Identity().RevisionNumber; got != 0x00110000 {
		t.Errorf("revision %#08x, want 0x00110000", got)
	}
}

// TestAKDShippedPDOs: the real AKD assigns its four flexible PDOs each
// way; 0x1601–0x1603 map the controlword and the mode's target, 0x1A01–
// 0x1A03 the statusword and the mode's actual value.
func TestAKDShippedPDOs(t *testing.T) {
	seg := preOpLine(t, "AKD")
	if got := listOf(t, seg, 0x1001, 0x1C12); !slices.Equal(got, []uint32{0x1600, 0x1601, 0x1602, 0x1603}) {
		t.Errorf("0x1C12 = %04x, want 1600–1603", got)
	}
	if got := listOf(t, seg, 0x1001, 0x1C13); !slices.Equal(got, []uint32{0x1A00, 0x1A01, 0x1A02, 0x1A03}) {
		t.Errorf("0x1C13 = %04x, want 1a00–1a03", got)
	}
	for i, target := range []uint32{0x60600008, 0x607A0020, 0x60FF0020} {
		if got := listOf(t, seg, 0x1001, 0x1601+uint16(i)); !slices.Equal(got, []uint32{0x60400010, target}) {
			t.Errorf("0x%04X = %08x, want 60400010 %08x", 0x1601+i, got, target)
		}
	}
	for i, actual := range []uint32{0x60610008, 0x60640020, 0x606C0020} {
		if got := listOf(t, seg, 0x1001, 0x1A01+uint16(i)); !slices.Equal(got, []uint32{0x60410010, actual}) {
			t.Errorf("0x%04X = %08x, want 60410010 %08x", 0x1A01+i, got, actual)
		}
	}
}

// TestChipRegistersPerESC: the information block and configuration
// registers the real chips answer.
func TestChipRegistersPerESC(t *testing.T) {
	for _, c := range []struct {
		model string
		ado   uint16
		want  []byte
	}{
		{"AKD", 0x0000, []byte{0x04, 0x02}},         // type, revision
		{"AKD", 0x0008, []byte{0x84, 0x01}},         // features 0x0184
		{"AKD", 0x0140, []byte{0x08, 0x0C}},         // PDI control, ESC configuration
		{"LAN9252", 0x0001, []byte{0x02}},           // revision
		{"LAN9252", 0x0007, []byte{0x1F}},           // port descriptor
		{"LAN9252", 0x0140, []byte{0x89, 0x0E}},     // PDI control, ESC configuration
		{"LAN9252", 0x0110, []byte{0x17}},           // DL status, low byte
		{"EL1004", 0x0102, []byte{0xC7}},            // DL control at power-up
		{"EL3004@0x00150000", 0x0102, []byte{0xC7}}, // the same ET1200
	} {
		seg := newSeg(t, []string{c.model})
		address(t, seg)
		d := one(t, seg, phys(wire.FPRD, 0x1001, c.ado, make([]byte, len(c.want))))
		if d.WKC != 1 || string(d.Data) != string(c.want) {
			t.Errorf("%s %#04x: % x (WKC %d), want % x", c.model, c.ado, d.Data, d.WKC, c.want)
		}
	}
}

// TestAKDConfigurationNotFromSII: the AKD's 0x0140/0x0141 are its own,
// whatever SII word 0 says (the real image has 0x0009 there).
func TestAKDConfigurationNotFromSII(t *testing.T) {
	seg := newSeg(t, []string{"../testdata/real-hw/sii/akd.bin"})
	address(t, seg)
	if d := one(t, seg, phys(wire.FPRD, 0x1001, 0x0140, make([]byte, 2))); string(d.Data) != "\x08\x0C" {
		t.Errorf("akd.bin 0x0140: % x, want 08 0c", d.Data)
	}
}

// TestALControlHandshakeOfMicrocontrollers: the AKD and the LAN9252 take
// no second AL control write (BWR, WKC 0) until their firmware has read
// the first; after it has, the next write counts.
func TestALControlHandshakeOfMicrocontrollers(t *testing.T) {
	for _, model := range []string{"AKD", "LAN9252"} {
		seg, now := clockedSeg(t, []string{model, model})
		for _, adp := range []uint16{0x1001, 0x1002} {
			siiMailboxSMs(t, seg, adp)
		}
		*now = 10_000_000
		if d := one(t, seg, phys(wire.BWR, 0, 0x0120, le16b(0x02))); d.WKC != 2 {
			t.Fatalf("%s: first BWR 0x0120: WKC %d, want 2", model, d.WKC)
		}
		if d := one(t, seg, phys(wire.BWR, 0, 0x0120, le16b(0x02))); d.WKC != 0 {
			t.Errorf("%s: BWR 0x0120 before the firmware read the first: WKC %d, want 0", model, d.WKC)
		}
		*now += 100_000_000
		if d := one(t, seg, phys(wire.BWR, 0, 0x0120, le16b(0x02))); d.WKC != 2 {
			t.Errorf("%s: BWR 0x0120 after the firmware read the first: WKC %d, want 2", model, d.WKC)
		}
	}
}

// TestEK1914ClearsReadEvent: after the master has read the EK1914's send
// mailbox, SyncManager 1's read event bit (0x080D bit 1) is clear.
func TestEK1914ClearsReadEvent(t *testing.T) {
	seg := preOpLine(t, "EK1914")
	d := seg.Devices()[0]
	if err := d.SendEmergency(0x1000, 1, [5]byte{}); err != nil {
		t.Fatal(err)
	}
	mb := d.sii.Header.StandardMailbox
	if r := one(t, seg, phys(wire.FPRD, 0x1001, mb.SendOffset, make([]byte, mb.SendSize))); r.WKC != 1 {
		t.Fatalf("mailbox read: WKC %d", r.WKC)
	}
	one(t, seg, phys(wire.NOP, 0, 0, []byte{0}))
	if st := one(t, seg, phys(wire.FPRD, 0x1001, 0x080D, []byte{0})).Data[0]; st&smStatusReadEvent != 0 {
		t.Errorf("SM1 status %#02x after the read, want the read event (bit 1) clear", st)
	}
}

// TestLAN9252EvaluationBoardSII: the real board's EEPROM has a strings
// section of 0x84 words naming it "LAN9252-EVB-HBI" and its FMMU and
// SyncManager categories at words 0xD8–0xED, with the four SyncManagers
// 0x1000/0x80/0x26, 0x1080/0x80/0x22, 0x1100/2/0x64 and 0x1400/6/0x20.
func TestLAN9252EvaluationBoardSII(t *testing.T) {
	seg := newSeg(t, []string{"LAN9252"})
	img := seg.Devices()[0].SII()
	type cat struct{ typ, word, words int }
	var cats []cat
	for w := 0x40; w*2+4 <= len(img); {
		typ := int(binary.LittleEndian.Uint16(img[w*2:]))
		if typ == 0xFFFF {
			break
		}
		n := int(binary.LittleEndian.Uint16(img[w*2+2:]))
		cats = append(cats, cat{typ, w, n})
		w += 2 + n
	}
	find := func(typ int) cat {
		for _, c := range cats {
			if c.typ == typ {
				return c
			}
		}
		t.Fatalf("no category %d in %v", typ, cats)
		return cat{}
	}
	if s := find(10); s.words != 0x84 || !strings.Contains(string(img[s.word*2+4:(s.word+2+s.words)*2]), "LAN9252-EVB-HBI") {
		t.Errorf("strings: %#x words at %#x, want 0x84 words naming LAN9252-EVB-HBI", s.words, s.word)
	}
	fmmu, sm := find(40), find(41)
	if fmmu.word != 0xD8 || sm.word+2+sm.words-1 != 0xED {
		t.Errorf("FMMU category at word %#x, SyncManagers end at %#x; want 0xD8 and 0xED", fmmu.word, sm.word+2+sm.words-1)
	}
	want := [][3]int{{0x1000, 0x80, 0x26}, {0x1080, 0x80, 0x22}, {0x1100, 2, 0x64}, {0x1400, 6, 0x20}}
	for i, w := range want {
		b := img[(sm.word+2+4*i)*2:]
		got := [3]int{int(binary.LittleEndian.Uint16(b)), int(binary.LittleEndian.Uint16(b[2:])), int(b[4])}
		if got != w {
			t.Errorf("SM%d: %#x, want %#x", i, got, w)
		}
	}
}

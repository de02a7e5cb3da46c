package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// TestPowerCycleKeepsEEPROM writes an alias into SII word 4 (and the
// header checksum into word 7) through the EEPROM interface, as a master's
// alias command does, power-cycles the segment and finds every device in
// its power-up state with the alias loaded from the EEPROM into 0x0012.
func TestPowerCycleKeepsEEPROM(t *testing.T) {
	seg, now := clockedSeg(t, []string{"EK1100", "EL2004", "AKD"})
	*now = 1_000_000
	address(t, seg)
	const alias = 0x1234
	img := seg.Devices()[1].SII()
	binary.LittleEndian.PutUint16(img[8:], alias)
	crc := sii.CRC8(img[:0x0E])
	write := func(word uint32, lo, hi byte) {
		t.Helper()
		siiCommand(t, seg, 0x1002, esc.SIICmdWrite|esc.SIIWriteEnable, word, lo, hi)
		*now += siiI2C.writeCycle // the chip's write cycle (issue 16)
		if st := siiStatus(t, seg, 0x1002); st&(esc.SIIBusy|esc.SIICommandError) != 0 {
			t.Fatalf("0x0502 = %#04x after writing word %#x", st, word)
		}
	}
	write(4, alias&0xFF, alias>>8)
	write(7, crc, img[0x0F])
	if got := binary.LittleEndian.Uint16(seg.devices[1].Register(0x0012, 2)); got != 0 {
		t.Fatalf("0x0012 = %#04x before the power cycle, want 0 (the ESC loads the EEPROM at power-up)", got)
	}
	// Leave state behind: user RAM written, a lost link counted.
	one(t, seg, phys(wire.FPWR, 0x1003, 0x0F80, []byte{0xAA}))
	seg.devices[0].mem.b[0x0310] = 3

	if _, err := seg.Faults().Apply(mustParse(t, "power-cycle")); err != nil {
		t.Fatal(err)
	}
	*now += 1_000_000
	for i, d := range seg.Devices() {
		if st, code := d.ALStatus(); st.State != esc.StateInit || st.Error || code != 0 {
			t.Errorf("device %d after the power cycle: %v %v, want INIT", i, st, code)
		}
		if a := d.StationAddress(); a != 0 {
			t.Errorf("device %d: station address %#04x after the power cycle, want 0", i, a)
		}
	}
	if seg.devices[2].Register(0x0F80, 1)[0] != 0 || seg.devices[0].Register(0x0310, 1)[0] != 0 {
		t.Error("registers survived the power cycle")
	}
	// A master reads the alias by position, before addressing anything.
	d := one(t, seg, phys(wire.APRD, wire.PositionADP(1), 0x0012, make([]byte, 2)))
	if got := binary.LittleEndian.Uint16(d.Data); d.WKC != 1 || got != alias {
		t.Errorf("0x0012 of device 1 after the power cycle: %#04x (WKC %d), want %#04x", got, d.WKC, alias)
	}
	if got := seg.Devices()[1].SII(); binary.LittleEndian.Uint16(got[8:]) != alias || got[0x0E] != crc {
		t.Error("the EEPROM lost the written words")
	}
	if c := seg.Faults().Counts(); c.PowerCycles != 1 {
		t.Errorf("PowerCycles %d, want 1", c.PowerCycles)
	}
}

// TestPowerCycleReturnsLostDevices: a device that had lost power comes
// back with the others.
func TestPowerCycleReturnsLostDevices(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	if err := seg.Faults().Disappear(1); err != nil {
		t.Fatal(err)
	}
	if err := seg.Faults().PowerCycle(); err != nil {
		t.Fatal(err)
	}
	if d := one(t, seg, phys(wire.BRD, 0, 0x0000, make([]byte, 1))); d.WKC != 2 {
		t.Errorf("BRD after the power cycle: WKC %d, want 2", d.WKC)
	}
}

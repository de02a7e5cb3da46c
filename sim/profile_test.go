package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// TestDLControlPowerUp: DL control reads its power-up value before any
// write, per controller.
func TestDLControlPowerUp(t *testing.T) {
	for _, c := range []struct {
		model string
		want  byte
	}{{"EK1100", 0xC7}, {"AKD", 0x07}} {
		seg := newSeg(t, []string{c.model})
		d := one(t, seg, phys(wire.APRD, 0, 0x0100, make([]byte, 4)))
		if d.WKC != 1 || d.Data[2] != c.want {
			t.Errorf("%s: DL control % x (WKC %d), want 0x0102 = %#02x", c.model, d.Data, d.WKC, c.want)
		}
	}
}

// TestSIIControlStateBit: 0x0502 bit 4 is set below SAFEOP on the EL1004,
// in INIT only on the EL3004 and never on the EL2004.
func TestSIIControlStateBit(t *testing.T) {
	for _, c := range []struct {
		model             string
		init, preop, safe uint16
	}{
		{"EL1004", 0x0050, 0x0050, 0x0040},
		{"EL3004", 0x0050, 0x0040, 0},
		{"EL2004", 0x0040, 0x0040, 0x0040},
	} {
		seg := newSeg(t, []string{c.model})
		address(t, seg)
		mailboxSMs(t, seg, 0x1001)
		for _, s := range []struct {
			ctl  uint16
			want uint16
		}{{0x01, c.init}, {0x02, c.preop}, {0x04, c.safe}} {
			if s.want == 0 {
				continue
			}
			if st, _ := request(t, seg, 0x1001, s.ctl); st != s.ctl {
				t.Fatalf("%s: AL control %#04x: status %#04x", c.model, s.ctl, st)
			}
			if v := siiStatus(t, seg, 0x1001); v != s.want {
				t.Errorf("%s in state %#02x: 0x0502 = %#04x, want %#04x", c.model, s.ctl, v, s.want)
			}
		}
	}
}

// TestAKDEmulatedEEPROM: the AKD's emulated EEPROM reports 0x0020, reads
// 4 bytes at a time and is never busy.
func TestAKDEmulatedEEPROM(t *testing.T) {
	seg, _ := clockedSeg(t, []string{"AKD"})
	if v := siiStatus(t, seg, 0x1001); v != esc.SIIEmulation {
		t.Fatalf("0x0502 = %#04x, want 0x0020", v)
	}
	siiCommand(t, seg, 0x1001, esc.SIICmdRead, 4)
	if v := siiStatus(t, seg, 0x1001); v&esc.SIIBusy != 0 {
		t.Fatalf("0x0502 = %#04x right after the command, want never busy", v)
	}
	got := one(t, seg, phys(wire.FPRD, 0x1001, 0x0508, make([]byte, 8))).Data
	img := seg.Devices()[0].SII()
	if string(got[:4]) != string(img[8:12]) || string(got[4:]) != "\x00\x00\x00\x00" {
		t.Errorf("data % x, want % x then zeros (4-byte reads)", got, img[8:12])
	}
}

// TestALControlIsAMailbox: without device emulation a second AL control
// write is refused (WKC 0) until the controller took the first.
func TestALControlIsAMailbox(t *testing.T) {
	seg, now := clockedSeg(t, []string{"EL3004", "EL1004"})
	mailboxSMs(t, seg, 0x1001)
	if d := one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x02))); d.WKC != 1 {
		t.Fatalf("first AL control write: WKC %d", d.WKC)
	}
	if d := one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x01))); d.WKC != 0 {
		t.Errorf("second AL control write before the controller read the first: WKC %d, want 0", d.WKC)
	}
	*now += fwBeckhoffTerminal.esm.typ
	if st := alStatus(t, seg, 0x1001); st != 0x02 {
		t.Fatalf("AL status %#04x, want PREOP (the first request)", st)
	}
	if d := one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x01))); d.WKC != 1 {
		t.Errorf("AL control write after the controller took the first: WKC %d, want 1", d.WKC)
	}
	// Device emulation (EL1004): every write goes through.
	for range 2 {
		if d := one(t, seg, phys(wire.FPWR, 0x1002, 0x0120, le16b(0x02))); d.WKC != 1 {
			t.Errorf("EL1004 AL control write: WKC %d, want 1", d.WKC)
		}
	}
}

// opEL4132 brings an EL4132 (outputs in SyncManager 2 with the watchdog
// trigger) to OP on a clock the test sets, and returns the segment.
func opEL4132(t *testing.T) (*Segment, *int64) {
	t.Helper()
	seg, now := clockedSeg(t, []string{"EL4132"})
	mailboxSMs(t, seg, 0x1001)
	configSM(t, seg, 0x1001, 2, 0x1100, 4, 0x64)
	for _, ctl := range []uint16{0x02, 0x04, 0x08} {
		one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(ctl)))
		*now += 10_000_000
		if st := alStatus(t, seg, 0x1001); st != ctl {
			t.Fatalf("AL control %#04x: status %#04x", ctl, st)
		}
	}
	return seg, now
}

// TestSyncManagerWatchdog: outputs not refreshed for the watchdog time
// (100 ms with the power-up registers) drop a device with a controller to
// SAFEOP with error 0x001B; refreshed outputs keep it in OP.
func TestSyncManagerWatchdog(t *testing.T) {
	seg, now := opEL4132(t)
	for range 20 {
		*now += 90_000_000
		if d := one(t, seg, phys(wire.FPWR, 0x1001, 0x1100, make([]byte, 4))); d.WKC != 1 {
			t.Fatalf("output write: WKC %d", d.WKC)
		}
		if st := alStatus(t, seg, 0x1001); st != 0x08 {
			t.Fatalf("AL status %#04x with outputs every 90 ms, want OP", st)
		}
	}
	*now += 100_000_000
	d := one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, make([]byte, 6)))
	if st, code := binary.LittleEndian.Uint16(d.Data), binary.LittleEndian.Uint16(d.Data[4:]); st != 0x14 || code != 0x001B {
		t.Fatalf("100 ms without outputs: AL status %#04x code %#04x, want 0x14 0x001b", st, code)
	}
	if w := one(t, seg, phys(wire.FPRD, 0x1001, 0x0440, make([]byte, 1))).Data[0]; w&0x01 != 0 {
		t.Errorf("watchdog status %#02x, want expired (bit 0 clear)", w)
	}
}

// TestWatchdogStartsInOP: a master that never sends outputs in OP lets the
// watchdog expire too.
func TestWatchdogStartsInOP(t *testing.T) {
	seg, now := opEL4132(t)
	*now += 99_000_000
	if st := alStatus(t, seg, 0x1001); st != 0x08 {
		t.Fatalf("AL status %#04x 99 ms into OP, want OP", st)
	}
	*now += 1_000_000
	if st := alStatus(t, seg, 0x1001); st != 0x14 {
		t.Errorf("AL status %#04x 100 ms into OP without outputs, want 0x14", st)
	}
}

// TestALControlFramedIsReadAtOnce: counting frames (WithStateChangeDelay)
// the controller reads a request with the next frame however long it
// then takes, so a slow transition does not lock AL control.
func TestALControlFramedIsReadAtOnce(t *testing.T) {
	seg := newSeg(t, []string{"EL3004"}, WithStateChangeDelay(1000))
	address(t, seg)
	mailboxSMs(t, seg, 0x1001)
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x02)))
	if d := one(t, seg, phys(wire.FPWR, 0x1001, 0x0120, le16b(0x01))); d.WKC != 1 {
		t.Errorf("AL control write a frame after the first: WKC %d, want 1", d.WKC)
	}
}

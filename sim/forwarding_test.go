package sim

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// The reference line of the tests: an EK1100 (DC), an EL2004 and an EL1004
// (no DC), an EL3204 with an application controller.
var lineSpecs = []string{"EK1100", "EL2004", "EL1004", "EL3204"}

func TestPhysicalAddressingAndWorkingCounter(t *testing.T) {
	tests := []struct {
		name     string
		send     dg
		wantWKC  uint16
		wantADP  uint16 // returned ADP (auto-increment and broadcast count devices)
		wantData []byte // nil: not checked
	}{
		{"APRD first device", phys(wire.APRD, 0, 0x0010, make([]byte, 2)), 1, 4, le16b(0x1001)},
		{"APRD third device", phys(wire.APRD, wire.PositionADP(2), 0x0010, make([]byte, 2)), 1, 2, le16b(0x1003)},
		{"APRD beyond the line", phys(wire.APRD, wire.PositionADP(4), 0x0010, make([]byte, 2)), 0, 0, []byte{0, 0}},
		{"FPRD by station address", phys(wire.FPRD, 0x1002, 0x0010, make([]byte, 2)), 1, 0x1002, le16b(0x1002)},
		{"FPRD unknown address", phys(wire.FPRD, 0x2000, 0x0010, make([]byte, 2)), 0, 0x2000, []byte{0, 0}},
		{"FPRD information block", phys(wire.FPRD, 0x1001, 0x0000, make([]byte, 10)), 1, 0x1001,
			[]byte{0x11, 0x00, 0x03, 0x00, 8, 8, 8, 0x3B, 0xFC, 0x00}},
		{"BRD ORs the ESC types", phys(wire.BRD, 0, 0x0000, make([]byte, 2)), 4, 4, []byte{0x13, 0x01}},
		{"BRD DL status high bytes", phys(wire.BRD, 0, 0x0111, make([]byte, 1)), 4, 4, []byte{0x5A | 0x56}},
		{"BWR read-write register", phys(wire.BWR, 0, 0x0200, le16b(0x0004)), 4, 4, nil},
		{"BWR read-only register", phys(wire.BWR, 0, 0x0000, []byte{0xFF}), 0, 4, nil},
		{"BWR station alias is not writable from EtherCAT", phys(wire.BWR, 0, 0x0012, le16b(7)), 0, 4, nil},
		{"BWR system time counts DC devices", phys(wire.BWR, 0, 0x0910, make([]byte, 8)), 1, 4, nil},
		{"BWR read-only DC difference", phys(wire.BWR, 0, 0x092C, make([]byte, 4)), 0, 4, nil},
		{"BWR receive time latch counts all", phys(wire.BWR, 0, 0x0900, make([]byte, 4)), 4, 4, nil},
		{"BWR FMMU 3 exists on the EK1100 only", phys(wire.BWR, 0, 0x0630, make([]byte, 16)), 1, 4, nil},
		{"BWR SyncManagers with read-only status", phys(wire.BWR, 0, 0x0800, make([]byte, 32)), 4, 4, nil},
		{"FPRD reserved register", phys(wire.FPRD, 0x1001, 0x0F40, []byte{0xAB}), 0, 0x1001, []byte{0xAB}},
		{"FPRD DC register of a device without DC", phys(wire.FPRD, 0x1002, 0x0918, make([]byte, 8)), 0, 0x1002, nil},
		{"FPRD beyond the RAM", phys(wire.FPRD, 0x1002, 0x2000, []byte{0x5A}), 0, 0x1002, []byte{0x5A}},
		{"FPRW read-write register", phys(wire.FPRW, 0x1001, 0x0020, []byte{0x01}), 3, 0x1001, []byte{0x00}},
		{"APRW read-only register reads only", phys(wire.APRW, 0, 0x0000, []byte{0xFF}), 1, 4, []byte{0x11}},
		{"NOP does nothing", phys(wire.NOP, 0, 0x0000, []byte{0xEE}), 0, 0, []byte{0xEE}},
		{"undefined command does nothing", dg{wire.Command(0x1F), 0, []byte{0xEE}}, 0, 0, []byte{0xEE}},
		{"FRMW reference reads, DC devices write", phys(wire.FRMW, 0x1001, 0x0910, make([]byte, 8)), 1, 0x1001, nil},
		{"ARMW: first reads, the others write", phys(wire.ARMW, 0, 0x0020, []byte{0}), 4, 4, []byte{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := newSeg(t, lineSpecs)
			address(t, seg)
			got := one(t, seg, tt.send)
			if got.WKC != tt.wantWKC || got.ADP() != tt.wantADP {
				t.Errorf("WKC %d ADP %#04x, want WKC %d ADP %#04x", got.WKC, got.ADP(), tt.wantWKC, tt.wantADP)
			}
			if tt.wantData != nil && !bytes.Equal(got.Data, tt.wantData) {
				t.Errorf("data % x, want % x", got.Data, tt.wantData)
			}
		})
	}
}

func TestBroadcastReadWrite(t *testing.T) {
	seg := newSeg(t, lineSpecs)
	address(t, seg)
	// Give each device a different write-enable byte, then BRW: each device
	// ORs its old value into the datagram and stores the datagram as it
	// arrived, so the answer ORs everything and device k holds the sent
	// byte ORed with the old values of the devices before it.
	for i, v := range []byte{0x01, 0x02, 0x04, 0x08} {
		one(t, seg, phys(wire.FPWR, 0x1001+uint16(i), 0x0020, []byte{v}))
	}
	got := one(t, seg, phys(wire.BRW, 0, 0x0020, []byte{0x40}))
	if got.WKC != 4*3 || got.Data[0] != 0x4F {
		t.Errorf("BRW: WKC %d data %#02x, want 12 and 0x4f", got.WKC, got.Data[0])
	}
	for i, want := range []byte{0x40, 0x41, 0x43, 0x47} {
		if d := one(t, seg, phys(wire.FPRD, 0x1001+uint16(i), 0x0020, []byte{0})); d.Data[0] != want {
			t.Errorf("device %d holds %#02x after BRW, want %#02x", i, d.Data[0], want)
		}
	}
	// FPRW returns the old value and stores the new one.
	if d := one(t, seg, phys(wire.FPRW, 0x1002, 0x0020, []byte{0x33})); d.WKC != 3 || d.Data[0] != 0x41 {
		t.Errorf("FPRW: WKC %d data %#02x", d.WKC, d.Data[0])
	}
	// ARMW: the addressed device reads, the others take its value.
	one(t, seg, phys(wire.FPWR, 0x1003, 0x0020, []byte{0x5A}))
	if d := one(t, seg, phys(wire.ARMW, wire.PositionADP(2), 0x0020, []byte{0})); d.WKC != 4 || d.Data[0] != 0x5A {
		t.Errorf("ARMW: WKC %d data %#02x, want 4 and 0x5a", d.WKC, d.Data[0])
	}
	for i := range 4 {
		want := byte(0x5A)
		if i < 2 {
			want = 0x00 // devices before the reader wrote the datagram's 0 on the way
		}
		if d := one(t, seg, phys(wire.FPRD, 0x1001+uint16(i), 0x0020, []byte{0})); d.Data[0] != want {
			t.Errorf("device %d after ARMW: %#02x, want %#02x", i, d.Data[0], want)
		}
	}
}

func TestAliasAddressing(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	address(t, seg)
	// The alias comes from SII word 4 (0 on the models); write it through an
	// EEPROM reload is not needed: the register is PDI writable only, so set
	// it as the device's EEPROM would.
	seg.devices[1].mem.b[0x0012] = 0x34
	seg.devices[1].mem.b[0x0013] = 0x12
	if d := one(t, seg, phys(wire.FPRD, 0x1234, 0x0010, make([]byte, 2))); d.WKC != 0 {
		t.Errorf("alias answered while disabled: WKC %d", d.WKC)
	}
	// DL control bit 24 enables alias addressing.
	one(t, seg, phys(wire.FPWR, 0x1002, 0x0103, []byte{0x01}))
	if d := one(t, seg, phys(wire.FPRD, 0x1234, 0x0010, make([]byte, 2))); d.WKC != 1 || binary.LittleEndian.Uint16(d.Data) != 0x1002 {
		t.Errorf("alias addressing: WKC %d data % x", d.WKC, d.Data)
	}
}

func TestErrorCountersClearOnWrite(t *testing.T) {
	seg := newSeg(t, lineSpecs)
	address(t, seg)
	seg.devices[0].mem.b[0x0300] = 7
	if d := one(t, seg, phys(wire.BWR, 0, 0x0300, bytes.Repeat([]byte{0xFF}, 8))); d.WKC != 4 {
		t.Fatalf("BWR error counters: WKC %d", d.WKC)
	}
	if d := one(t, seg, phys(wire.FPRD, 0x1001, 0x0300, make([]byte, 0x14))); d.WKC != 1 || !bytes.Equal(d.Data, make([]byte, 0x14)) {
		t.Errorf("error counters after clear: WKC %d % x", d.WKC, d.Data)
	}
}

func TestDLStatusAndLoopControl(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004"})
	address(t, seg)
	// The values the real EK1100 and EL1004 answered in the captures.
	for adp, want := range map[uint16]uint16{0x1001: 0x5A31, 0x1002: 0x5613} {
		d := one(t, seg, phys(wire.FPRD, adp, 0x0110, make([]byte, 2)))
		if got := binary.LittleEndian.Uint16(d.Data); got != want {
			t.Errorf("DL status of %#04x = %#04x, want %#04x", adp, got, want)
		}
	}
	// Closing the EK1100's port 1 (DL control 0x0101 bits 2–3 = 3) keeps
	// frames away from the EL1004.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0101, []byte{0x0C}))
	if d := one(t, seg, phys(wire.BRD, 0, 0x0000, []byte{0})); d.WKC != 1 {
		t.Errorf("BRD with port 1 closed: WKC %d, want 1", d.WKC)
	}
	d := one(t, seg, phys(wire.FPRD, 0x1001, 0x0110, make([]byte, 2)))
	if got := binary.LittleEndian.Uint16(d.Data); got&0x0400 == 0 {
		t.Errorf("DL status %#04x does not show port 1 closed", got)
	}
	// Back to automatic.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0101, []byte{0x00}))
	if d := one(t, seg, phys(wire.BRD, 0, 0x0000, []byte{0})); d.WKC != 2 {
		t.Errorf("BRD with port 1 open again: WKC %d, want 2", d.WKC)
	}
	// Forcing the last device's open port 1 open loses the frame.
	one(t, seg, phys(wire.FPWR, 0x1002, 0x0101, []byte{0x08}))
	if seg.Process(frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))) {
		t.Error("frame sent out of an open port without link came back")
	}
}

func TestMalformedFramesAreDropped(t *testing.T) {
	seg := newSeg(t, []string{"EK1100"})
	good := frameOf(t, phys(wire.BRD, 0, 0x0000, []byte{0}))
	cases := map[string][]byte{
		"IPv4":            append(append(append([]byte(nil), good[:12]...), 0x08, 0x00), good[14:]...),
		"short":           good[:15],
		"header too long": append(append([]byte(nil), good[:14]...), 0xFF, 0x17),
		"truncated chain": good[:len(good)-3],
		"type 4":          append(append(append([]byte(nil), good[:14]...), good[14], 0x40|good[15]&0x0F), good[16:]...),
	}
	for name, f := range cases {
		before := append([]byte(nil), f...)
		if seg.Process(f) {
			t.Errorf("%s: processed", name)
		}
		if !bytes.Equal(f, before) {
			t.Errorf("%s: frame changed", name)
		}
	}
	if st := seg.Stats(); st.Dropped != uint64(len(cases)) || st.Answered != 0 {
		t.Errorf("stats %+v", st)
	}
}

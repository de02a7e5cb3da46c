package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

func TestDisappearAndReturn(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004", "EL2004", "EL3204"})
	address(t, seg)
	f := seg.Faults()
	brdWKC := func() uint16 { return one(t, seg, phys(wire.BRD, 0, 0, []byte{0})).WKC }
	if w := brdWKC(); w != 4 {
		t.Fatalf("BRD before: WKC %d", w)
	}
	if err := f.Disappear(2); err != nil {
		t.Fatal(err)
	}
	if w := brdWKC(); w != 2 {
		t.Errorf("BRD with device 2 gone: WKC %d, want 2", w)
	}
	for _, adp := range []uint16{0x1003, 0x1004} {
		if d := one(t, seg, phys(wire.FPRD, adp, 0x0130, make([]byte, 2))); d.WKC != 0 {
			t.Errorf("FPRD %#04x behind the gap: WKC %d", adp, d.WKC)
		}
	}
	if d := one(t, seg, phys(wire.APRD, wire.PositionADP(2), 0x0000, []byte{0})); d.WKC != 0 {
		t.Errorf("APRD position 2: WKC %d", d.WKC)
	}
	// The EL1004 sees no link on port 1 and closes it.
	dl := binary.LittleEndian.Uint16(one(t, seg, phys(wire.FPRD, 0x1002, 0x0110, make([]byte, 2))).Data)
	if st := esc.DecodeDLStatus(le16b(dl)); st.Ports[1].Link || !st.Ports[1].Loop {
		t.Errorf("DL status of the device before the gap %#04x: port 1 %+v", dl, st.Ports[1])
	}
	if err := f.Disappear(2); !errors.Is(err, ErrDeviceOff) {
		t.Errorf("second Disappear: %v", err)
	}
	if err := f.Return(1); !errors.Is(err, ErrDeviceOn) {
		t.Errorf("Return of a powered device: %v", err)
	}
	if err := f.Return(2); err != nil {
		t.Fatal(err)
	}
	if w := brdWKC(); w != 4 {
		t.Errorf("BRD after the return: WKC %d, want 4", w)
	}
	dl = binary.LittleEndian.Uint16(one(t, seg, phys(wire.FPRD, 0x1002, 0x0110, make([]byte, 2))).Data)
	if st := esc.DecodeDLStatus(le16b(dl)); !st.Ports[1].Link || st.Ports[1].Loop {
		t.Errorf("DL status after the return %#04x: port 1 %+v", dl, st.Ports[1])
	}
	// The returned device has power-up registers: station address 0,
	// INIT, an idle EEPROM interface, the same DL status as a new device.
	fresh := newSeg(t, []string{"EK1100", "EL1004", "EL2004", "EL3204"})
	d := seg.Devices()[2]
	if a := d.StationAddress(); a != 0 {
		t.Errorf("station address %#04x after power-up", a)
	}
	if d := one(t, seg, phys(wire.FPRD, 0x1003, 0x0000, []byte{0})); d.WKC != 0 {
		t.Errorf("FPRD of the old address: WKC %d", d.WKC)
	}
	st := one(t, seg, phys(wire.APRD, wire.PositionADP(2), 0x0130, make([]byte, 2)))
	if v := binary.LittleEndian.Uint16(st.Data); st.WKC != 1 || v != 0x01 {
		t.Errorf("AL status of the returned device: %#04x WKC %d", v, st.WKC)
	}
	for _, r := range []struct {
		addr uint16
		n    int
	}{{0x0000, 0x10}, {0x0010, 2}, {0x0110, 2}, {0x0130, 6}, {0x0500, 0x10}, {0x0600, 0x30}, {0x0800, 0x20}} {
		if got, want := d.Register(r.addr, r.n), fresh.Devices()[2].Register(r.addr, r.n); !bytes.Equal(got, want) {
			t.Errorf("registers %#04x: % x after power-up, % x on a new device", r.addr, got, want)
		}
	}
	// A BRD of the station addresses shows the returned device's 0.
	addrs := one(t, seg, phys(wire.BRD, 0, 0x0010, make([]byte, 2)))
	if addrs.WKC != 4 || binary.LittleEndian.Uint16(addrs.Data) != (0x1001|0x1002|0x1004) {
		t.Errorf("BRD 0x0010: %#04x WKC %d", binary.LittleEndian.Uint16(addrs.Data), addrs.WKC)
	}
	if c := f.Counts(); c.Disappeared != 1 || c.Returned != 1 {
		t.Errorf("counts %+v", c)
	}
}

func TestDisappearFirstDeviceLosesEveryFrame(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	if err := seg.Faults().Disappear(0); err != nil {
		t.Fatal(err)
	}
	if lost := lostAt(answered(t, seg, 3)); len(lost) != 3 {
		t.Errorf("lost %v, want all 3", lost)
	}
	if err := seg.Faults().Disappear(5); !errors.Is(err, ErrNoSuchDevice) {
		t.Errorf("Disappear(5): %v", err)
	}
	if err := seg.Faults().Return(0); err != nil {
		t.Fatal(err)
	}
	if d := one(t, seg, phys(wire.BRD, 0, 0, []byte{0})); d.WKC != 2 {
		t.Errorf("BRD after the return: WKC %d", d.WKC)
	}
}

// TestReturnIsAPowerCycle configures a device, cuts its power and brings
// it back: its SyncManagers, FMMUs, state, station address and clock are
// those of a new device, while the device behind it, which kept its
// power, keeps its configuration.
func TestReturnIsAPowerCycle(t *testing.T) {
	line := []string{"EK1100", "EL3204", "EL3204"}
	// The clock stands still but where the test moves it: state changes
	// count frames.
	seg := newSeg(t, line, WithStateChangeDelay(1))
	now := int64(1_000_000)
	seg.now = func() int64 { return now }
	address(t, seg)
	for _, adp := range []uint16{0x1002, 0x1003} {
		mailboxSMs(t, seg, adp)
		if st, _ := request(t, seg, adp, 0x02); st != 0x02 {
			t.Fatalf("%#04x to PREOP: %#04x", adp, st)
		}
	}
	configFMMU(t, seg, 0x1002, 0, esc.FMMU{LogicalStart: 0x10000, Length: 2, PhysicalStart: 0x1180, LogicalEndBit: 7, Type: esc.FMMURead, Active: true})
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0920, binary.LittleEndian.AppendUint64(nil, 1<<40)))
	now += 10_000_000_000
	f := seg.Faults()
	if err := f.Disappear(1); err != nil {
		t.Fatal(err)
	}
	if err := f.Disappear(0); err != nil {
		t.Fatal(err)
	}
	if err := f.Return(0); err != nil {
		t.Fatal(err)
	}
	if err := f.Return(1); err != nil {
		t.Fatal(err)
	}
	fresh := newSeg(t, line)
	fresh.now = func() int64 { return 0 }
	for pos := range 2 {
		got, want := seg.devices[pos], fresh.devices[pos]
		for _, r := range []struct {
			addr uint16
			n    int
		}{{0x0010, 2}, {0x0120, 2}, {0x0130, 6}, {0x0600, 0x10}, {0x0800, 0x10}, {0x0920, 8}} {
			if g, w := got.Register(r.addr, r.n), want.Register(r.addr, r.n); !bytes.Equal(g, w) {
				t.Errorf("device %d registers %#04x: % x, on a new device % x", pos, r.addr, g, w)
			}
		}
		if g, w := got.SystemTime(), want.SystemTime(); g != w {
			t.Errorf("device %d system time %d after power-up, %d on a new device", pos, g, w)
		}
	}
	// The device behind kept its power: PREOP at 0x1003.
	d := one(t, seg, phys(wire.FPRD, 0x1003, 0x0130, make([]byte, 2)))
	if st := binary.LittleEndian.Uint16(d.Data); d.WKC != 1 || st != 0x02 {
		t.Errorf("device behind the gap: AL status %#04x WKC %d, want PREOP", st, d.WKC)
	}
	if c := f.Counts(); c.Disappeared != 2 || c.Returned != 2 {
		t.Errorf("counts %+v", c)
	}
}

func TestReturnAsAnotherDevice(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004", "EL1014"})
	f := seg.Faults()
	if err := f.ReturnAs(2, "EL2008"); !errors.Is(err, ErrDeviceOn) {
		t.Fatalf("ReturnAs of a powered device: %v", err)
	}
	if err := f.Disappear(2); err != nil {
		t.Fatal(err)
	}
	if err := f.ReturnAs(2, "EL2008"); err != nil {
		t.Fatal(err)
	}
	d := seg.Devices()[2]
	if d.Name() != "EL2008" || d.StationAddress() != 0 {
		t.Fatalf("position 2 is %s at %#04x, want a fresh EL2008", d.Name(), d.StationAddress())
	}
	if c := f.Counts(); c.Disappeared != 1 || c.Returned != 1 {
		t.Fatalf("counts %v", c)
	}
}

package sim

import (
	"errors"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/sim/faultcmd"
)

// errorCounters reads 0x0300–0x0313 of the device at station adp in a
// frame of its own.
func errorCounters(tb testing.TB, seg *Segment, adp uint16) []byte {
	tb.Helper()
	d := one(tb, seg, phys(wire.FPRD, adp, 0x0300, make([]byte, 0x14)))
	if d.WKC != 1 {
		tb.Fatalf("FPRD 0x0300 of %#x: WKC %d", adp, d.WKC)
	}
	return d.Data
}

func TestNoisyPortOutbound(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004", "EL1004"})
	address(t, seg)
	// 250 errors a second on the cable into device 1 (its port 0): with a
	// frame every 2 ms every other frame crosses it damaged.
	if _, err := seg.Faults().Apply(mustParse(t, "noisy 1 0 250")); err != nil {
		t.Fatal(err)
	}
	lost := 0
	for i := range 10 {
		// Each frame writes the user RAM of devices 0 and 1.
		f := frameOf(t, phys(wire.FPWR, 0x1001, 0x0F80, []byte{byte(i + 1)}),
			phys(wire.FPWR, 0x1002, 0x0F80, []byte{byte(i + 1)}))
		if !seg.Process(f) {
			lost++
			if got := seg.devices[1].Register(0x0F80, 1)[0]; got == byte(i+1) {
				t.Errorf("frame %d: device 1 committed the write of a damaged frame", i)
			}
			if got := seg.devices[0].Register(0x0F80, 1)[0]; got != byte(i+1) {
				t.Errorf("frame %d: device 0 (before the noise) has %d, want the write %d", i, got, i+1)
			}
		}
	}
	if lost != 5 {
		t.Fatalf("%d of 10 frames lost, want 5", lost)
	}
	if err := seg.Faults().Noisy(1, 0, 0); err != nil {
		t.Fatal(err)
	}
	c := seg.Faults().Counts()
	if c.CRCErrors != 5 || seg.Stats().Dropped != 5 {
		t.Errorf("CRCErrors %d, Dropped %d, want 5", c.CRCErrors, seg.Stats().Dropped)
	}
	d0, d1, d2 := errorCounters(t, seg, 0x1001), errorCounters(t, seg, 0x1002), errorCounters(t, seg, 0x1003)
	check := func(name string, regs []byte, off int, want byte) {
		t.Helper()
		if regs[off] != want {
			t.Errorf("%s 0x%04X = %d, want %d", name, 0x0300+off, regs[off], want)
		}
	}
	check("device 1 invalid frame port 0", d1, 0x00, 5)
	check("device 1 RX error port 0", d1, 0x01, 5)
	check("device 1 processing unit", d1, 0x0C, 5)
	check("device 1 forwarded port 1 (coming back)", d1, 0x09, 5)
	check("device 2 forwarded port 0", d2, 0x08, 5)
	check("device 2 invalid frame port 0", d2, 0x00, 0)
	check("device 0 forwarded port 1", d0, 0x09, 5)
	check("device 0 invalid frame port 0", d0, 0x00, 0)
	check("device 0 invalid frame port 1", d0, 0x02, 0)

	// A write of any value to one counter of 0x0300–0x030B clears all of
	// them, not 0x030C (ET1100 datasheet section II).
	if d := one(t, seg, phys(wire.FPWR, 0x1002, 0x0309, []byte{0x55})); d.WKC != 1 {
		t.Fatalf("clear: WKC %d", d.WKC)
	}
	d1 = errorCounters(t, seg, 0x1002)
	for off := range 0x0C {
		check("device 1 after clear", d1, off, 0)
	}
	check("device 1 processing unit after clearing 0x0300-0x030B", d1, 0x0C, 5)
	one(t, seg, phys(wire.FPWR, 0x1002, 0x030C, []byte{0}))
	check("device 1 processing unit after its clear", errorCounters(t, seg, 0x1002), 0x0C, 0)
}

func TestNoisyPortReturn(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004", "EL1004"})
	address(t, seg)
	// Device 1's port 1 receives the frames coming back from device 2:
	// every device has processed them, the master gets none.
	if err := seg.Faults().Noisy(1, 1, 500); err != nil { // one error a frame
		t.Fatal(err)
	}
	for i := range 4 {
		f := frameOf(t, phys(wire.FPWR, 0x1003, 0x0F80, []byte{byte(i + 1)}))
		if seg.Process(f) {
			t.Fatalf("frame %d answered through the noise", i)
		}
		if got := seg.devices[2].Register(0x0F80, 1)[0]; got != byte(i+1) {
			t.Errorf("frame %d: device 2 has %d, want the write %d", i, got, i+1)
		}
	}
	if err := seg.Faults().Noisy(1, 1, 0); err != nil {
		t.Fatal(err)
	}
	d0, d1, d2 := errorCounters(t, seg, 0x1001), errorCounters(t, seg, 0x1002), errorCounters(t, seg, 0x1003)
	if d1[0x02] != 4 || d1[0x03] != 4 || d1[0x0C] != 0 || d1[0x00] != 0 {
		t.Errorf("device 1: invalid/RX port 1 %d/%d, port 0 %d, processing unit %d; want 4/4, 0, 0", d1[2], d1[3], d1[0], d1[0x0C])
	}
	if d0[0x09] != 4 || d0[0x02] != 0 {
		t.Errorf("device 0: forwarded port 1 %d, invalid port 1 %d; want 4, 0", d0[0x09], d0[0x02])
	}
	for off, v := range d2 {
		if v != 0 {
			t.Errorf("device 2 0x%04X = %d, want 0 (the noise is behind it)", 0x0300+off, v)
		}
	}
}

func TestNoisyErrors(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	f := seg.Faults()
	if err := f.Noisy(2, 0, 1); !errors.Is(err, ErrNoSuchDevice) {
		t.Errorf("noisy 2: %v, want ErrNoSuchDevice", err)
	}
	if err := f.Noisy(0, 2, 1); err == nil {
		t.Error("noisy on port 2, which a line does not use: no error")
	}
	if err := f.Noisy(0, 0, -1); err == nil {
		t.Error("noisy at a negative rate: no error")
	}
}

// mustParse parses a fault command line or fails the test.
func mustParse(tb testing.TB, line string) faultcmd.Command {
	tb.Helper()
	c, err := faultcmd.Parse(line)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

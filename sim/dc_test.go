package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/wire"
)

func TestDistributedClocks(t *testing.T) {
	seg := newSeg(t, lineSpecs)
	var now int64 = 5_000_000
	seg.now = func() int64 { return now }
	address(t, seg)
	le := binary.LittleEndian

	// A write to 0x0900 latches the receive times of this frame.
	if d := one(t, seg, phys(wire.BWR, 0, 0x0900, make([]byte, 4))); d.WKC != 4 {
		t.Fatalf("BWR 0x0900: WKC %d", d.WKC)
	}
	var port0, port1 [4]uint32
	for i := range 4 {
		d := one(t, seg, phys(wire.FPRD, 0x1001+uint16(i), 0x0900, make([]byte, 16)))
		port0[i], port1[i] = le.Uint32(d.Data), le.Uint32(d.Data[4:])
	}
	local := func(i int, t int64) uint32 { return uint32(seg.devices[i].clock.local(t)) }
	for i := range 4 {
		if want := local(i, now+int64(i)*forwardHop); port0[i] != want {
			t.Errorf("device %d port 0 receive time %d, want %d", i, port0[i], want)
		}
	}
	// The frame comes back through port 1 of every device but the last,
	// later the further it went.
	for i := range 3 {
		d0 := int64(port1[i]) - int64(port0[i])
		d1 := int64(port1[i+1]) - int64(port0[i+1])
		if i == 2 {
			d1 = 0
		}
		if d0 <= d1 {
			t.Errorf("device %d: round trip %d ns not longer than the next device's %d ns", i, d0, d1)
		}
	}
	if got := string(one(t, seg, phys(wire.FPRD, 0x1004, 0x0904, make([]byte, 4))).Data); got != "hoff" {
		t.Errorf("last device's unconnected port 1 reads %q", got)
	}

	// System time: local time plus the offset the master writes, live.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0920, binary.LittleEndian.AppendUint64(nil, 1_000_000)))
	now += 1000
	d := one(t, seg, phys(wire.FPRD, 0x1001, 0x0910, make([]byte, 8)))
	if got, want := le.Uint64(d.Data), seg.devices[0].clock.local(now)+1_000_000; d.WKC != 1 || got != want {
		t.Errorf("system time %d (WKC %d), want %d", got, d.WKC, want)
	}
	// Devices without DC have no system time.
	if d := one(t, seg, phys(wire.FPRD, 0x1002, 0x0910, make([]byte, 8))); d.WKC != 0 {
		t.Errorf("EL2004 system time: WKC %d, want 0", d.WKC)
	}
	// A written system time feeds the difference register: 500 ns ahead
	// of the local copy shows as +500 (bit 31 set: local smaller).
	sys := seg.devices[0].clock.system(seg.devices[0].mem.b[:], now)
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0910, binary.LittleEndian.AppendUint64(nil, sys+500)))
	diff := le.Uint32(one(t, seg, phys(wire.FPRD, 0x1001, 0x092C, make([]byte, 4))).Data)
	if diff != 1<<31|500 {
		t.Errorf("system time difference %#08x, want %#08x", diff, uint32(1<<31|500))
	}
	// FRMW: the reference reads, every other DC device writes.
	if d := one(t, seg, phys(wire.FRMW, 0x1001, 0x0910, make([]byte, 8))); d.WKC != 1 || le.Uint64(d.Data) == 0 {
		t.Errorf("FRMW with one DC device: WKC %d time %d", d.WKC, le.Uint64(d.Data))
	}
}

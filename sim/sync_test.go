package sim

import (
	"encoding/binary"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// activatedUnit returns a cyclic unit activated at system time act with
// the given start and cycle times, on an ESC with a 64- or 32-bit system
// time.
func activatedUnit(act, start uint64, cycle0, cycle1 uint32, activation byte, wide bool) (*syncUnit, []byte) {
	regs := make([]byte, 0x1000)
	if wide {
		regs[esc.RegFeatures] = 0x08
	}
	le := binary.LittleEndian
	le.PutUint64(regs[esc.RegDCStartTime:], start)
	le.PutUint32(regs[esc.RegDCSync0Cycle:], cycle0)
	le.PutUint32(regs[esc.RegDCSync1Cycle:], cycle1)
	s := &syncUnit{}
	s.startTimeWritten(regs)
	regs[esc.RegDCActivation] = activation
	s.activationWritten(regs, act)
	return s, regs
}

func TestSync0PulseCount(t *testing.T) {
	const act = 50_000_000_000
	const ms = 1_000_000
	tests := []struct {
		name   string
		start  uint64
		cycle  uint32
		wide   bool
		at     []uint64 // system times
		pulses []uint64
	}{
		{"1 ms cycle", act + 5*ms, ms, true,
			[]uint64{act, act + 5*ms - 1, act + 5*ms, act + 5*ms + ms/2, act + 6*ms, act + 1005*ms},
			[]uint64{0, 0, 1, 1, 2, 1001}},
		{"250 µs cycle", act + 100, 250_000, true,
			[]uint64{act + 99, act + 100, act + 100 + 4*ms - 1, act + 100 + 4*ms},
			[]uint64{0, 1, 16, 17}},
		{"single shot", act + ms, 0, true,
			[]uint64{act, act + ms, act + 100_000*ms},
			[]uint64{0, 1, 1}},
		// A 64-bit system time never comes back to a start in the past.
		{"start in the past", act - 1, ms, true,
			[]uint64{act, act + 3_600_000*ms, act + 100*86_400_000*ms},
			[]uint64{0, 0, 0}},
		// A 32-bit one does, when its low 32 bits wrap around.
		{"start in the past, 32-bit", act - 1000*ms, ms, false,
			[]uint64{act + 1<<32 - 1000*ms - 1, act + 1<<32 - 1000*ms, act + 1<<32 - 998*ms},
			[]uint64{0, 1, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := activatedUnit(act, tc.start, tc.cycle, 0, 0x03, tc.wide)
			for i, sys := range tc.at {
				if got := s.pulses0(sys); got != tc.pulses[i] {
					t.Errorf("at activation%+d ns: %d SYNC0 pulses, want %d", int64(sys-act), got, tc.pulses[i])
				}
			}
		})
	}
}

func TestSync1FollowsSync0(t *testing.T) {
	const act, start = 1_000_000, 3_000_000
	const ms = 1_000_000
	tests := []struct {
		cycle1 uint32
		first  uint64 // first SYNC1 pulse
		period uint64
	}{
		{0, start, ms}, // SYNC1 reflects SYNC0
		{250_000, start + 250_000, ms},
		{ms, start + ms, ms},
		{1_500_000, start + 1_500_000, 2 * ms}, // next SYNC0 at or after the pulse, plus the delay
		{2 * ms, start + 2*ms, 2 * ms},
		{2_500_000, start + 2_500_000, 3 * ms},
	}
	for _, tc := range tests {
		t.Run(fmtf("%d", tc.cycle1), func(t *testing.T) {
			s, _ := activatedUnit(act, start, ms, tc.cycle1, 0x07, true)
			// Find the pulse times by stepping through 20 ms.
			var times []uint64
			last := uint64(0)
			for sys := uint64(act); sys < act+20*ms; sys += 10_000 {
				if n := s.pulses1(sys); n != last {
					if n != last+1 {
						t.Fatalf("SYNC1 count jumped from %d to %d", last, n)
					}
					times = append(times, sys)
					last = n
				}
			}
			if len(times) < 3 {
				t.Fatalf("SYNC1 pulses at %v", times)
			}
			for k, at := range times {
				if want := tc.first + uint64(k)*tc.period; at != want {
					t.Errorf("SYNC1 pulse %d at %d, want %d", k, at, want)
				}
			}
			if got := s.next1(act); got != tc.first {
				t.Errorf("next SYNC1 before the start: %d, want %d", got, tc.first)
			}
		})
	}
}

func TestSyncStatusPulseMode(t *testing.T) {
	const act, start, cycle = 0, 1_000_000, 1_000_000
	s, regs := activatedUnit(act, start, cycle, 0, 0x03, true)
	binary.LittleEndian.PutUint16(regs[esc.RegDCPulseLength:], 100) // 1 µs
	lo, hi := int(esc.RegDCSync0Status), int(esc.RegDCSync0Status)
	for _, tc := range []struct {
		sys  uint64
		want byte
	}{
		{start - 1, 0}, {start, 1}, {start + 999, 1}, {start + 1000, 0}, {start + cycle + 10, 1}, {start + cycle + 10, 1},
	} {
		s.refresh(regs, lo, hi, tc.sys)
		if got := regs[esc.RegDCSync0Status]; got != tc.want {
			t.Errorf("SYNC0 status at %d: %d, want %d", tc.sys, got, tc.want)
		}
	}
}

// syncSetup is what a master writes to start SYNC0 on device adp, the way
// SOEM's ecx_dcsync0 does: unit off, cycle times, start time, unit on.
func syncSetup(tb testing.TB, seg *Segment, adp uint16, start uint64, cycle0, cycle1 uint32, activation byte) {
	tb.Helper()
	le := binary.LittleEndian
	for _, d := range []dg{
		phys(wire.FPWR, adp, 0x0981, []byte{0}),
		phys(wire.FPWR, adp, 0x0980, []byte{0}),
		phys(wire.FPWR, adp, 0x09A0, le.AppendUint32(nil, cycle0)),
		phys(wire.FPWR, adp, 0x09A4, le.AppendUint32(nil, cycle1)),
		phys(wire.FPWR, adp, 0x0990, le.AppendUint64(nil, start)),
		phys(wire.FPWR, adp, 0x0981, []byte{activation}),
	} {
		if r := one(tb, seg, d); r.WKC != 1 {
			tb.Fatalf("FPWR %#04x: WKC %d", d.addr&0xFFFF, r.WKC)
		}
	}
}

func TestSyncRegisters(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	now := int64(7_000_000_000)
	seg.now = func() int64 { return now }
	address(t, seg)
	le := binary.LittleEndian
	dev := seg.devices[0]
	read := func(addr uint16, n int) []byte {
		t.Helper()
		r := one(t, seg, phys(wire.FPRD, 0x1001, addr, make([]byte, n)))
		if r.WKC != 1 {
			t.Fatalf("FPRD %#04x: WKC %d", addr, r.WKC)
		}
		return r.Data
	}
	sys := le.Uint64(read(0x0910, 8))
	const ms = 1_000_000
	start := sys + 10*ms
	syncSetup(t, seg, 0x1001, start, ms, 250_000, 0x07)
	if !dev.Sync0Active() || dev.Sync0Pulses() != 0 {
		t.Fatalf("after activation: active %v, %d pulses; want active, 0", dev.Sync0Active(), dev.Sync0Pulses())
	}
	if got := read(0x0984, 1)[0]; got != 0x03 {
		t.Errorf("activation status %#02x before the start, want 0x03 (both first pulses pending)", got)
	}
	if got := le.Uint64(read(0x0990, 8)); got != start {
		t.Errorf("0x0990 before the start: %d, want the start %d", got, start)
	}
	if got := le.Uint64(read(0x0998, 8)); got != start+250_000 {
		t.Errorf("0x0998 before the start: %d, want %d", got, start+250_000)
	}
	if got := read(0x098E, 1)[0]; got != 0 {
		t.Errorf("SYNC0 status %d before the start", got)
	}
	// Registers the master wrote read back.
	if got := read(0x0980, 2); got[1] != 0x07 {
		t.Errorf("0x0981 reads %#02x, want 0x07", got[1])
	}
	if got := le.Uint32(read(0x09A0, 4)); got != ms {
		t.Errorf("0x09A0 reads %d", got)
	}
	if got := le.Uint32(read(0x09A4, 4)); got != 250_000 {
		t.Errorf("0x09A4 reads %d", got)
	}

	now += 10 * ms
	if got := dev.Sync0Pulses(); got != 1 {
		t.Errorf("at the start time: %d pulses, want 1", got)
	}
	if got := read(0x0984, 1)[0]; got != 0x02 {
		t.Errorf("activation status %#02x at the start, want 0x02 (SYNC1 pending)", got)
	}
	// Acknowledge mode (pulse length 0): reading the status clears it.
	if got := read(0x098E, 1)[0]; got != 1 {
		t.Errorf("SYNC0 status %d after a pulse, want 1", got)
	}
	if got := read(0x098E, 1)[0]; got != 0 {
		t.Errorf("SYNC0 status %d read twice, want 0", got)
	}
	now += 3*ms + ms/2
	if got := dev.Sync0Pulses(); got != 4 {
		t.Errorf("3.5 ms after the start: %d pulses, want 4", got)
	}
	if got := dev.sync0Pulses(now); got != 4 {
		t.Errorf("sync0Pulses(now) = %d, want 4", got)
	}
	if got := le.Uint64(read(0x0990, 8)); got != start+4*ms {
		t.Errorf("0x0990 reads %d, want the next pulse %d", got, start+4*ms)
	}
	if got := le.Uint64(read(0x0998, 8)); got != start+4*ms+250_000 {
		t.Errorf("0x0998 reads %d, want the next SYNC1 pulse %d", got, start+4*ms+250_000)
	}
	if got := read(0x0984, 1)[0]; got != 0 {
		t.Errorf("activation status %#02x, want 0", got)
	}
	if got := read(0x098E, 1)[0]; got != 1 {
		t.Errorf("SYNC0 status %d after new pulses, want 1", got)
	}

	// Switching the unit off stops the pulses.
	one(t, seg, phys(wire.FPWR, 0x1001, 0x0981, []byte{0}))
	if dev.Sync0Active() || dev.Sync0Pulses() != 0 {
		t.Errorf("after deactivation: active %v, %d pulses", dev.Sync0Active(), dev.Sync0Pulses())
	}

	// A start time already in the past: the unit waits for a wrap-around
	// of the 64-bit system time, so no pulse ever comes.
	sys = le.Uint64(read(0x0910, 8))
	syncSetup(t, seg, 0x1001, sys-1000, ms, 0, 0x03)
	now += 10_000 * ms
	if got := dev.Sync0Pulses(); got != 0 || !dev.Sync0Active() {
		t.Errorf("start in the past: %d pulses (active %v), want 0 (active)", got, dev.Sync0Active())
	}
	if got := read(0x0984, 1)[0]; got != 0x05 {
		t.Errorf("activation status %#02x, want 0x05 (first pulse pending, start out of range)", got)
	}

	// No DC, no cyclic unit.
	el := seg.devices[1]
	for _, d := range []dg{
		phys(wire.FPRD, 0x1002, 0x0990, make([]byte, 8)),
		phys(wire.FPWR, 0x1002, 0x0981, []byte{0x03}),
		phys(wire.FPRD, 0x1002, 0x098E, make([]byte, 1)),
	} {
		if r := one(t, seg, d); r.WKC != 0 {
			t.Errorf("EL2004 %v %#04x: WKC %d, want 0", d.cmd, d.addr&0xFFFF, r.WKC)
		}
	}
	if el.Sync0Active() || el.Sync0Pulses() != 0 || el.sync0Pulses(now) != 0 {
		t.Error("EL2004 has SYNC0")
	}
}

func TestSync0RunsOnTheDevicesOwnClock(t *testing.T) {
	// A clock 1000 ppm fast sees 1001 ms in 1000 ms of segment time.
	tests := []struct {
		ppm  float64
		want uint64
	}{{0, 1000}, {1000, 1001}, {-1000, 999}}
	for _, tc := range tests {
		t.Run(fmtf("%gppm", tc.ppm), func(t *testing.T) {
			seg := newSeg(t, []string{"EK1100"}, WithClockDrift(tc.ppm))
			now := int64(0)
			seg.now = func() int64 { return now }
			address(t, seg)
			d := seg.devices[0]
			const ms = 1_000_000
			start := d.SystemTime() + ms/2
			syncSetup(t, seg, 0x1001, start, ms, 0, 0x03)
			now += 1000 * ms
			if got := d.Sync0Pulses(); got != tc.want {
				t.Errorf("%d pulses in 1 s, want %d", got, tc.want)
			}
		})
	}
}

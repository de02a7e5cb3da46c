package sim

import (
	"cmp"
	"encoding/binary"
	"math/big"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/master/dc"
	"github.com/ecagent/ecagent/sim/faultcmd"
)

// floorScaled returns floor(t·ppb/1e9) with big integers, independently of
// the code under test.
func floorScaled(t, ppb int64) int64 {
	p := new(big.Int).Mul(big.NewInt(t), big.NewInt(ppb))
	q := new(big.Int).Div(p, big.NewInt(1e9)) // Euclidean: floor for a positive divisor
	return q.Int64()
}

func TestClockDriftRate(t *testing.T) {
	const hour = 3_600_000_000_000
	tests := []struct {
		ppm float64
		ppb int64
	}{
		{0, 0},
		{100, 100_000},
		{-100, -100_000},
		{12.345, 12_345},
		{-0.001, -1},
		{0.0004, 0}, // below 1 ppb
		{faultcmd.MaxDriftPPM, 1_000_000},
		{5000, 1_000_000}, // clamped
		{-5000, -1_000_000},
	}
	times := []int64{0, 1, 999, 1_000_000, 1_000_000_007, hour, 24 * hour, 30 * 24 * hour}
	for _, tc := range tests {
		t.Run(fmtf("%gppm", tc.ppm), func(t *testing.T) {
			seg := newSeg(t, []string{"EK1100"}, WithClockDrift(tc.ppm))
			var now int64
			seg.now = func() int64 { return now }
			d := seg.devices[0]
			base := d.clock.local(0)
			for _, at := range times {
				now = at
				want := base + uint64(at+floorScaled(at, tc.ppb))
				if got := d.clock.local(at); got != want {
					t.Errorf("local time after %d ns: %d, want %d (off by %d)", at, got, want, int64(got-want))
				}
				// The system time the master reads runs at the same rate.
				r := one(t, seg, phys(wire.APRD, 0, 0x0910, make([]byte, 8)))
				if got := binary.LittleEndian.Uint64(r.Data); r.WKC != 1 || got != want {
					t.Errorf("0x0910 after %d ns: %d (WKC %d), want %d", at, got, r.WKC, want)
				}
				if got := d.SystemTime(); got != want {
					t.Errorf("SystemTime after %d ns: %d, want %d", at, got, want)
				}
			}
		})
	}
}

func TestClockDriftRepeatsAndChanges(t *testing.T) {
	specs := []string{"EK1100", "EK1100", "EK1100"}
	seg := newSeg(t, specs, WithClockDrift(50, -20))
	var now int64
	seg.now = func() int64 { return now }
	const step = 10_000_000_000
	base := make([]uint64, 3)
	for i, d := range seg.devices {
		base[i] = d.clock.local(0)
	}
	now = step
	for i, ppb := range []int64{50_000, -20_000, 50_000} {
		if got, want := seg.devices[i].clock.local(now)-base[i], uint64(step+step*ppb/1e9); got != want {
			t.Errorf("device %d: %d ns elapsed, want %d", i, got, want)
		}
	}
	// A new drift takes over where the old one left off.
	d := seg.devices[1]
	at := d.clock.local(now)
	d.SetClockDrift(7.5)
	if got := d.clock.local(now); got != at {
		t.Errorf("SetClockDrift stepped the clock from %d to %d", at, got)
	}
	now += step
	if got, want := d.clock.local(now)-at, uint64(step+75_000); got != want {
		t.Errorf("after SetClockDrift(7.5): %d ns elapsed, want %d", got, want)
	}
	d.SetClockOffset(-5000)
	if got, want := d.clock.local(now), at+step+75_000-5000; got != want {
		t.Errorf("after SetClockOffset(-5000): %d, want %d", got, want)
	}
}

func TestHopDelay(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		fwd  uint32
	}{
		{"default", nil, 140},
		{"explicit default", []Option{WithHopDelay(140)}, 140},
		{"long cables", []Option{WithHopDelay(640)}, 640},
		{"short", []Option{WithHopDelay(60)}, 60},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seg := newSeg(t, []string{"EK1100", "EK1100", "EK1100"}, tc.opts...)
			seg.now = func() int64 { return 1_000_000 }
			address(t, seg)
			one(t, seg, phys(wire.BWR, 0, 0x0900, make([]byte, 4)))
			var arrival, back [3]uint32
			for i := range 3 {
				r := one(t, seg, phys(wire.FPRD, 0x1001+uint16(i), 0x0900, make([]byte, 8)))
				arrival[i] = binary.LittleEndian.Uint32(r.Data) - uint32(seg.devices[i].clock.local(0))
				back[i] = binary.LittleEndian.Uint32(r.Data[4:]) - uint32(seg.devices[i].clock.local(0))
			}
			for i := 1; i < 3; i++ {
				if got := arrival[i] - arrival[i-1]; got != tc.fwd {
					t.Errorf("device %d arrives %d ns after device %d, want %d", i, got, i-1, tc.fwd)
				}
			}
			// The way back is longer by the same link delay.
			wantBack := int64(tc.fwd) + turnDelay + max(returnHop+int64(tc.fwd)-forwardHop, 0)
			if got := back[1] - arrival[1]; int64(got) != wantBack {
				t.Errorf("device 1 round trip %d ns, want %d", got, wantBack)
			}
		})
	}
}

// master plays a master's distributed-clock setup on seg, as SOEM and
// ethercrab do: latch the receive times, compute delays and offsets with
// package dc, write them to 0x0928 and 0x0920. It returns the slaves as
// read and the results.
func configureDC(tb testing.TB, seg *Segment) ([]dc.Slave, []dc.Result) {
	tb.Helper()
	le := binary.LittleEndian
	if r := one(tb, seg, phys(wire.BWR, 0, 0x0900, make([]byte, 4))); r.WKC != uint16(len(seg.devices)) {
		tb.Fatalf("BWR 0x0900: WKC %d", r.WKC)
	}
	slaves := make([]dc.Slave, len(seg.devices))
	for i := range seg.devices {
		adp := 0x1001 + uint16(i)
		s := &slaves[i]
		s.Parent = i - 1
		if i == 0 {
			s.Parent = dc.NoParent
		}
		feat := one(tb, seg, phys(wire.FPRD, adp, 0x0008, make([]byte, 2)))
		s.DC = feat.Data[0]&0x04 != 0
		st := one(tb, seg, phys(wire.FPRD, adp, 0x0110, make([]byte, 2)))
		s.Ports = esc.DecodeDLStatus(st.Data).OpenPorts()
		pt := one(tb, seg, phys(wire.FPRD, adp, 0x0900, make([]byte, 16)))
		for p := range esc.PortCount {
			s.PortTimes[p] = le.Uint32(pt.Data[4*p:])
		}
		rt := one(tb, seg, phys(wire.FPRD, adp, 0x0918, make([]byte, 8)))
		s.SystemTime = rt.WKC == 1
		s.ReceiveTime = le.Uint64(rt.Data)
	}
	ref := dc.Reference(slaves)
	res, err := dc.Compute(slaves, slaves[ref].ReceiveTime)
	if err != nil {
		tb.Fatal(err)
	}
	for i, s := range slaves {
		if !s.SystemTime {
			continue
		}
		adp := 0x1001 + uint16(i)
		if r := one(tb, seg, phys(wire.FPWR, adp, 0x0920, le.AppendUint64(nil, res[i].Offset))); r.WKC != 1 {
			tb.Fatalf("device %d: FPWR 0x0920: WKC %d", i, r.WKC)
		}
		if r := one(tb, seg, phys(wire.FPWR, adp, 0x0928, le.AppendUint32(nil, res[i].Delay))); r.WKC != 1 {
			tb.Fatalf("device %d: FPWR 0x0928: WKC %d", i, r.WKC)
		}
	}
	return slaves, res
}

// dcLine is a line with DC devices of both controller families and a
// terminal without DC between them.
var dcLine = []string{"EK1100", realHW + "/sii/el2889.bin", "EL2004", "EK1100", realHW + "/sii/el2889.bin"}

// Loop bounds, from the model (clock.update). The speed counter can only
// apply rates of 1e8/N ppb, N from 0x7F to start−1: with the default
// start 0x1000 nothing between 0 and 24.4 ppm, and steps well under 1 ppm
// near the ±200 ppm a ±100 ppm pair needs. So per 1 ms update the applied
// rate may miss the needed one by up to 24.4 ppm: 24.4 ns of new error per
// update, plus below 1 ns of truncation. The PI loop (poles |z| ≈ 0.55)
// passes such disturbances on with a gain of at most 2.02 (the sum of the
// magnitudes of its impulse response), so the error stays within some
// 50 ns; the mean in 0x092C averages such errors. 100 ns leaves room for
// the change of update interval when a master sends the static drift
// compensation frames back to back and then one per cycle.
const (
	loopBound = 100 // ns
	cycleNs   = 1_000_000
)

func TestDriftCompensationSettles(t *testing.T) {
	tests := []struct {
		name  string
		drift []float64
		opts  []Option
		// static is the time between the static compensation's frames
		// (default one cycle); SOEM sends them back to back.
		static int64
	}{
		{"±100 ppm", []float64{100, -100, 0, -100, 100}, nil, 0},
		{"-100 ppm reference", []float64{-100, 100, 0, 100, -100}, nil, 0},
		{"uneven drifts", []float64{100, -37.3, 0, 81.9, -100}, nil, 0},
		{"small drifts", []float64{3, -2.5, 0, 1, 0}, nil, 0},
		{"long cables", []float64{100, -100, 0, -100, 100}, []Option{WithHopDelay(640)}, 0},
		{"static frames back to back", []float64{100, -37.3, 0, 81.9, -100}, nil, 30_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seg := newSeg(t, dcLine, append([]Option{WithClockDrift(tc.drift...)}, tc.opts...)...)
			now := int64(2_000_000_000)
			seg.now = func() int64 { return now }
			address(t, seg)
			slaves, res := configureDC(t, seg)
			ref := dc.Reference(slaves)
			refADP := 0x1001 + uint16(ref)
			frmw := frameOf(t, phys(wire.FRMW, refADP, 0x0910, make([]byte, 8)))
			frame := make([]byte, len(frmw))
			cycle := func(step int64) {
				now += step
				copy(frame, frmw)
				if !seg.Process(frame) {
					t.Fatal("FRMW frame not processed")
				}
			}
			// Static drift compensation.
			static := cmp.Or(tc.static, cycleNs)
			for range 15_000 {
				cycle(static)
			}
			var worstDiff, worstSys int64
			for n := range 10_000 {
				cycle(cycleNs)
				refSys := int64(seg.devices[ref].SystemTime())
				for i, s := range slaves {
					if !s.SystemTime || i == ref {
						continue
					}
					d := seg.devices[i]
					diff := int64(d.SystemTimeDifference())
					worstDiff = max(worstDiff, absInt(diff))
					if absInt(diff) > loopBound {
						t.Fatalf("cycle %d: device %d: |0x092C| = %d ns > %d", n, i, diff, loopBound)
					}
					// The loop makes the received time plus the delay match the
					// local copy when the frame arrives, one hop per device
					// after the reference: the system times differ by the
					// error of the measured delay, plus the loop's error.
					hops := int64(i-ref) * seg.hops.forward
					sys := int64(d.SystemTime()) - refSys
					static := int64(res[i].Delay) - hops
					worstSys = max(worstSys, absInt(sys-static))
					if absInt(sys-static) > loopBound {
						t.Fatalf("cycle %d: device %d: system time %+d ns from the reference, %+d expected from its delay (bound %d)", n, i, sys, static, loopBound)
					}
					// The delay, half the round trip, misses the forward time
					// by half the asymmetry of the model's paths per hop.
					asym := absInt(seg.hops.forward-seg.hops.back-seg.hops.pass)/2*int64(i-ref) + 1
					if absInt(static) > asym {
						t.Fatalf("device %d: delay %d ns, %d ns from the true %d (bound %d)", i, res[i].Delay, static, hops, asym)
					}
				}
			}
			t.Logf("worst |0x092C| %d ns, worst system time error %d ns", worstDiff, worstSys)
			// The speed counter difference shows the rate applied: the
			// needed relative rate, to the speed counter's resolution.
			for i, s := range slaves {
				if !s.SystemTime || i == ref {
					continue
				}
				start := speedStart(seg.devices[i].mem.b[:])
				v := int64(int16(binary.LittleEndian.Uint16(seg.devices[i].Register(0x0932, 2))))
				need := ppbOf(tc.drift[ref%len(tc.drift)]) - ppbOf(tc.drift[i%len(tc.drift)])
				if got := speedRate(v, start); absInt(got-need) > speedRate(1, start) {
					t.Errorf("device %d: 0x0932 = %d applies %d ppb, need %d", i, v, got, need)
				}
			}
		})
	}
}

func TestLargeDifferenceIsSlewedNotStepped(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EK1100"})
	now := int64(1_000_000_000)
	seg.now = func() int64 { return now }
	address(t, seg)
	_, res := configureDC(t, seg)
	// A master that got the second offset wrong by 1 ms.
	const wrong = 1_000_000
	one(t, seg, phys(wire.FPWR, 0x1002, 0x0920, binary.LittleEndian.AppendUint64(nil, res[1].Offset+wrong)))
	d := seg.devices[1]
	prev := int64(d.SystemTime())
	const cycles = 100
	for n := range cycles {
		now += cycleNs
		one(t, seg, phys(wire.FRMW, 0x1001, 0x0910, make([]byte, 8)))
		sys := int64(d.SystemTime())
		// Slewed by at most 1e8/0x7F ppb: never stepped.
		const most = cycleNs * 787_402 / 1_000_000_000
		if step := sys - prev; step < cycleNs-most-1 || step > cycleNs+most+1 {
			t.Fatalf("cycle %d: system time advanced %d ns in a %d ns cycle", n, step, cycleNs)
		}
		prev = sys
	}
	// The difference shrinks at the full slew rate and shows what is left:
	// positive, the local copy ahead.
	left := int64(d.SystemTimeDifference())
	slewed := int64(cycles * cycleNs * 787_401 / 1_000_000_000)
	if left < wrong-slewed-1000 || left > wrong-slewed+20_000 {
		t.Errorf("after %d cycles 0x092C says %d ns left, want about %d", cycles, left, wrong-slewed)
	}
	if v := int16(binary.LittleEndian.Uint16(d.Register(0x0932, 2))); int64(v) != -(0x1000 - 0x7F) {
		t.Errorf("0x0932 = %d, want the full negative range %d", v, -(0x1000 - 0x7F))
	}
}

func TestSpeedCounterStartAndFilterDepthReset(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EK1100"}, WithClockDrift(0, 100))
	now := int64(1_000_000_000)
	seg.now = func() int64 { return now }
	address(t, seg)
	configureDC(t, seg)
	for range 200 {
		now += cycleNs
		one(t, seg, phys(wire.FRMW, 0x1001, 0x0910, make([]byte, 8)))
	}
	le := binary.LittleEndian
	if v := le.Uint16(one(t, seg, phys(wire.FPRD, 0x1002, 0x0932, make([]byte, 2))).Data); v == 0 {
		t.Fatal("0x0932 zero while compensating 100 ppm")
	}
	// Writing the speed counter start restarts the drift control.
	if r := one(t, seg, phys(wire.FPWR, 0x1002, 0x0930, le16b(0x1000))); r.WKC != 1 {
		t.Fatalf("FPWR 0x0930: WKC %d", r.WKC)
	}
	if v := le.Uint16(one(t, seg, phys(wire.FPRD, 0x1002, 0x0932, make([]byte, 2))).Data); v != 0 {
		t.Errorf("0x0932 = %#04x after a write of 0x0930, want 0", v)
	}
	// Writing the filter depth restarts the mean difference.
	one(t, seg, phys(wire.FPWR, 0x1002, 0x0910, le.AppendUint64(nil, seg.devices[1].SystemTime()+1000)))
	if got := seg.devices[1].SystemTimeDifference(); got == 0 {
		t.Fatal("no difference after writing a time 1000 ns ahead")
	}
	one(t, seg, phys(wire.FPWR, 0x1002, 0x0934, []byte{0x04}))
	if got := seg.devices[1].SystemTimeDifference(); got != 0 {
		t.Errorf("0x092C = %d after a write of 0x0934, want 0", got)
	}
}

func TestSystemTimeDifferenceSign(t *testing.T) {
	seg := newSeg(t, []string{"EK1100"})
	seg.now = func() int64 { return 1_000_000 }
	d := seg.devices[0]
	for _, off := range []int64{500, -500, 0, 70_000} {
		one(t, seg, phys(wire.APWR, 0, 0x0934, []byte{0x04})) // restart the mean
		sys := d.SystemTime()
		one(t, seg, phys(wire.APWR, 0, 0x0910, binary.LittleEndian.AppendUint64(nil, sys+uint64(off))))
		raw := binary.LittleEndian.Uint32(d.Register(0x092C, 4))
		// A received time ahead (off > 0) leaves the local copy smaller:
		// bit 31 set, and a negative difference.
		if got := d.SystemTimeDifference(); int64(got) != -off {
			t.Errorf("received %+d ns: SystemTimeDifference %d (0x092C %#08x), want %d", off, got, raw, -off)
		}
		if (raw&(1<<31) != 0) != (off > 0) {
			t.Errorf("received %+d ns: 0x092C %#08x, bit 31 wrong", off, raw)
		}
	}
}

func TestSystemTimeWriteAllocatesNothing(t *testing.T) {
	seg := newSeg(t, dcLine, WithClockDrift(100, -100))
	now := int64(1_000_000_000)
	seg.now = func() int64 { return now }
	address(t, seg)
	configureDC(t, seg)
	frmw := frameOf(t, phys(wire.FRMW, 0x1001, 0x0910, make([]byte, 8)),
		phys(wire.FPRD, 0x1002, 0x0980, make([]byte, 0x30)))
	frame := make([]byte, len(frmw))
	allocs := testing.AllocsPerRun(1000, func() {
		now += cycleNs
		copy(frame, frmw)
		seg.Process(frame)
	})
	if allocs != 0 {
		t.Errorf("Process of an FRMW 0x0910 frame: %v allocations, want 0", allocs)
	}
}

func BenchmarkFRMWSystemTime(b *testing.B) {
	seg := newSeg(b, dcLine, WithClockDrift(100, -100))
	now := int64(1_000_000_000)
	seg.now = func() int64 { return now }
	address(b, seg)
	configureDC(b, seg)
	frmw := frameOf(b, phys(wire.FRMW, 0x1001, 0x0910, make([]byte, 8)))
	frame := make([]byte, len(frmw))
	b.ReportAllocs()
	for b.Loop() {
		now += cycleNs
		copy(frame, frmw)
		seg.Process(frame)
	}
}

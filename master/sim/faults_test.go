package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/wire"
)

// answered sends n BRD frames through seg and returns, for each, whether
// it was answered.
func answeredLogical(tb testing.TB, seg *Segment, n int) []bool {
	tb.Helper()
	out := make([]bool, n)
	for i := range out {
		out[i] = seg.Process(frameOf(tb, logical(wire.LRD, 0x10000, []byte{0})))
	}
	return out
}

func answered(tb testing.TB, seg *Segment, n int) []bool {
	tb.Helper()
	out := make([]bool, n)
	for i := range out {
		out[i] = seg.Process(frameOf(tb, phys(wire.BRD, 0, 0, []byte{0})))
	}
	return out
}

func lostAt(got []bool) []int {
	var lost []int
	for i, ok := range got {
		if !ok {
			lost = append(lost, i)
		}
	}
	return lost
}

func TestDropFaults(t *testing.T) {
	tests := []struct {
		name string
		arm  func(f *Faults)
		want []int // indexes of the lost frames among 12
	}{
		{"off", func(*Faults) {}, nil},
		{"every 4", func(f *Faults) { f.DropEvery(4) }, []int{3, 7, 11}},
		{"next 3", func(f *Faults) { f.DropNext(3) }, []int{0, 1, 2}},
		{"next 2 and every 5", func(f *Faults) { f.DropNext(2); f.DropEvery(5) }, []int{0, 1, 4, 9}},
		{"every then off", func(f *Faults) { f.DropEvery(2); f.DropOff() }, nil},
		{"percent 100", func(f *Faults) { f.DropPercent(100) }, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := newSeg(t, []string{"EK1100", "EL2004"})
			tt.arm(seg.Faults())
			lost := lostAt(answeredLogical(t, seg, 12))
			if !equalInts(lost, tt.want) {
				t.Fatalf("lost frames %v, want %v", lost, tt.want)
			}
			if c := seg.Faults().Counts(); c.Dropped != uint64(len(tt.want)) {
				t.Errorf("Counts().Dropped = %d, want %d", c.Dropped, len(tt.want))
			}
			if st := seg.Stats(); st.Dropped != uint64(len(tt.want)) || st.Answered != uint64(12-len(tt.want)) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDropNextSparesAcyclicFrames checks that DropNext takes only frames
// with process data: a master's acyclic traffic passes.
func TestDropNextSparesAcyclicFrames(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	seg.Faults().DropNext(2)
	if lost := lostAt(answered(t, seg, 5)); len(lost) != 0 {
		t.Fatalf("acyclic frames %v lost", lost)
	}
	if lost := lostAt(answeredLogical(t, seg, 4)); !equalInts(lost, []int{0, 1}) {
		t.Fatalf("process-data frames %v lost, want [0 1]", lost)
	}
}

// TestDroppedFrameNeverReachesDevices checks that a lost frame has no
// effect: a write in it does not happen.
func TestDroppedFrameNeverReachesDevices(t *testing.T) {
	seg := newSeg(t, []string{"EK1100"})
	seg.Faults().DropEvery(1)
	if seg.Process(frameOf(t, phys(wire.APWR, 0, 0x0010, le16b(0x1001)))) {
		t.Fatal("frame answered")
	}
	if a := seg.Devices()[0].StationAddress(); a != 0 {
		t.Errorf("station address %#04x after a lost write", a)
	}
}

func TestDropPercentIsSeededAndReproducible(t *testing.T) {
	run := func(seed uint64) []int {
		seg := newSeg(t, []string{"EK1100"})
		seg.Faults().SetSeed(seed)
		seg.Faults().DropPercent(30)
		lost := lostAt(answered(t, seg, 1000))
		if c := seg.Faults().Counts().Dropped; c != uint64(len(lost)) {
			t.Fatalf("Counts().Dropped = %d, %d frames lost", c, len(lost))
		}
		return lost
	}
	a, b, c := run(7), run(7), run(8)
	if !equalInts(a, b) {
		t.Error("same seed, different losses")
	}
	if equalInts(a, c) {
		t.Error("different seeds, same losses")
	}
	if len(a) < 240 || len(a) > 360 {
		t.Errorf("30%% of 1000 frames: %d lost", len(a))
	}
}

func TestCorruptWKC(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	seg.Faults().CorruptWKC(2)
	// The logical datagram is the one corrupted, though it comes second.
	frame := func() []wire.Datagram {
		return exchange(t, seg, phys(wire.BRD, 0, 0, []byte{0}), logical(wire.LRD, 0x10000, []byte{0}))
	}
	for i, want := range []uint16{1, 1, 0} {
		d := frame()
		if d[0].WKC != 2 || d[1].WKC != want {
			t.Errorf("frame %d: WKC %d, %d; want 2, %d", i, d[0].WKC, d[1].WKC, want)
		}
	}
	// A frame without process data passes untouched, and does not use
	// up the corruption.
	seg.Faults().CorruptWKC(1)
	if d := exchange(t, seg, phys(wire.BRD, 0, 0, []byte{0}), phys(wire.BRD, 0, 0, []byte{0})); d[0].WKC != 2 || d[1].WKC != 2 {
		t.Errorf("physical frame: WKC %d, %d; want 2, 2", d[0].WKC, d[1].WKC)
	}
	if d := frame(); d[1].WKC != 1 {
		t.Errorf("process-data frame after it: WKC %d, want 1 (corrupted)", d[1].WKC)
	}
	if c := seg.Faults().Counts(); c.CorruptedWKC != 3 {
		t.Errorf("CorruptedWKC = %d, want 3", c.CorruptedWKC)
	}
}

func TestCorruptLengthIsRejectedByTheDecoder(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	seg.Faults().CorruptLength(1)
	for i, wantErr := range []error{wire.ErrDatagramOverrun, nil} {
		f := frameOf(t, logical(wire.LRD, 0x10000, make([]byte, 2)), phys(wire.BRD, 0, 0x10, make([]byte, 2)))
		if !seg.Process(f) {
			t.Fatalf("frame %d not answered", i)
		}
		if _, err := wire.Validate(f); !errors.Is(err, wantErr) {
			t.Errorf("frame %d: Validate = %v, want %v", i, err, wantErr)
		}
	}
	if c := seg.Faults().Counts(); c.CorruptedLength != 1 {
		t.Errorf("CorruptedLength = %d, want 1", c.CorruptedLength)
	}
}

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

// opEL3204 returns a segment with one EL3204 in OP at 0x1001.
func opEL3204(t *testing.T) *Segment {
	t.Helper()
	seg := newSeg(t, []string{"EL3204"})
	address(t, seg)
	mailboxSMs(t, seg, 0x1001)
	configSM(t, seg, 0x1001, 3, 0x1180, 16, 0x20)
	for _, ctl := range []uint16{0x02, 0x04, 0x08} {
		if st, _ := request(t, seg, 0x1001, ctl); st != ctl {
			t.Fatalf("AL control %#04x: status %#04x", ctl, st)
		}
	}
	return seg
}

func TestALError(t *testing.T) {
	tests := []struct {
		name  string
		steps []uint16 // AL control values written after the error
		want  []uint16 // AL status after each
		code  []esc.ALStatusCode
	}{
		{"OP refused before the acknowledge", []uint16{0x08}, []uint16{0x14}, []esc.ALStatusCode{0x001B}},
		{"acknowledge then OP", []uint16{0x14, 0x08}, []uint16{0x04, 0x08}, []esc.ALStatusCode{0, 0}},
		{"acknowledge with OP", []uint16{0x18}, []uint16{0x08}, []esc.ALStatusCode{0}},
		{"down to INIT", []uint16{0x01}, []uint16{0x01}, []esc.ALStatusCode{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := opEL3204(t)
			if err := seg.Faults().ALError(0, 0x001B); err != nil {
				t.Fatal(err)
			}
			d := one(t, seg, phys(wire.FPRD, 0x1001, 0x0130, make([]byte, 6)))
			if st, code := binary.LittleEndian.Uint16(d.Data), binary.LittleEndian.Uint16(d.Data[4:]); st != 0x14 || code != 0x001B {
				t.Fatalf("after the error: AL status %#04x code %#04x, want 0x14 0x001b", st, code)
			}
			for i, ctl := range tt.steps {
				if st, code := request(t, seg, 0x1001, ctl); st != tt.want[i] || code != tt.code[i] {
					t.Errorf("AL control %#04x: status %#04x code %v, want %#04x %v", ctl, st, code, tt.want[i], tt.code[i])
				}
			}
			if c := seg.Faults().Counts(); c.ALErrors != 1 {
				t.Errorf("ALErrors = %d", c.ALErrors)
			}
		})
	}
}

func TestALErrorNeedsAnApplicationController(t *testing.T) {
	seg := newSeg(t, []string{"EK1100"})
	if err := seg.Faults().ALError(0, 0x1B); !errors.Is(err, ErrNoApplication) {
		t.Errorf("ALError on an EK1100: %v", err)
	}
	if c := seg.Faults().Counts(); c.ALErrors != 0 {
		t.Errorf("ALErrors = %d after a refused error", c.ALErrors)
	}
}

// TestDriftJumpShowsInSystemTimeDifference runs the same DC line twice,
// once with a drift jump, and compares the mean system time difference
// 0x092C of the jumping device.
func TestDriftJumpShowsInSystemTimeDifference(t *testing.T) {
	diff := func(jump bool) int32 {
		seg := newSeg(t, []string{"EK1100", "EK1100"})
		now := int64(1_000_000_000)
		seg.now = func() int64 { return now }
		address(t, seg)
		configureDC(t, seg)
		cycle := func(n int) {
			for range n {
				now += cycleNs
				one(t, seg, phys(wire.FRMW, 0x1001, 0x0910, make([]byte, 8)))
			}
		}
		cycle(200)
		if jump {
			if err := seg.Faults().DriftJump(1, 500); err != nil {
				t.Fatal(err)
			}
		}
		cycle(3)
		return seg.devices[1].SystemTimeDifference()
	}
	steady, jumped := diff(false), diff(true)
	if steady > 5 || steady < -5 {
		t.Fatalf("steady line: 0x092C %d ns", steady)
	}
	// 500 ppm is 500 ns a 1 ms cycle: the clock runs ahead (a positive
	// difference) until the control loop catches up, which takes cycles.
	if jumped < 50 {
		t.Errorf("after a 500 ppm jump: 0x092C %d ns (steady %d)", jumped, steady)
	}
}

func TestOffsetJumpStepsSystemTime(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	seg.now = func() int64 { return 5_000_000 }
	before := seg.devices[0].SystemTime()
	if err := seg.Faults().OffsetJump(0, 12_345); err != nil {
		t.Fatal(err)
	}
	if got := seg.devices[0].SystemTime(); got-before != 12_345 {
		t.Errorf("system time moved by %d, want 12345", got-before)
	}
	if err := seg.Faults().OffsetJump(1, 1); !errors.Is(err, ErrNoDC) {
		t.Errorf("OffsetJump on an EL2004: %v", err)
	}
	if c := seg.Faults().Counts(); c.OffsetJumps != 1 || c.DriftJumps != 0 {
		t.Errorf("counts %+v", c)
	}
}

// TestFaultDelayOverServe checks that Serve holds back exactly the
// answers a delay fault selects.
func TestFaultDelayOverServe(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004"})
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, b) }()
	rx := make([]byte, link.MaxFrameSize)
	late := func() bool {
		if err := a.Send(frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Recv(rx, time.Now().Add(15*time.Millisecond)); err == nil {
			return false
		}
		if _, err := a.Recv(rx, time.Now().Add(time.Second)); err != nil {
			t.Fatalf("delayed answer never came: %v", err)
		}
		return true
	}
	seg.Faults().Delay(40*time.Millisecond, 2)
	var got []bool
	for range 4 {
		got = append(got, late())
	}
	seg.Faults().DelayOff()
	got = append(got, late())
	want := []bool{false, true, false, true, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("late answers %v, want %v", got, want)
		}
	}
	// While an answer is held back, the segment still serves others.
	seg.Faults().Delay(200*time.Millisecond, 1)
	if err := a.Send(frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	seg.Faults().Counts()
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Counts blocked for %v during a delay", d)
	}
	if c := seg.Faults().Counts(); c.Delayed != 3 {
		t.Errorf("Delayed = %d, want 3", c.Delayed)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

// flakyLink fails with a link error while down is set.
type flakyLink struct {
	link.Link
	fails int
}

func (l *flakyLink) Recv(buf []byte, deadline time.Time) (int, error) {
	if l.fails > 0 {
		l.fails--
		return 0, &link.OpError{Op: "recv", Link: "flaky", Err: syscall.ENETDOWN}
	}
	return l.Link.Recv(buf, deadline)
}

func TestServeRidesThroughLinkDown(t *testing.T) {
	seg := newSeg(t, []string{"EK1100"})
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, &flakyLink{Link: b, fails: 5}) }()
	if err := a.Send(frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))); err != nil {
		t.Fatal(err)
	}
	rx := make([]byte, link.MaxFrameSize)
	if _, err := a.Recv(rx, time.Now().Add(2*time.Second)); err != nil {
		t.Fatalf("no answer after the link came back: %v", err)
	}
	if st := seg.Stats(); st.LinkErrs != 5 {
		t.Errorf("LinkErrs = %d, want 5", st.LinkErrs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}

func TestProcessWithFaultsArmedAllocatesNothing(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004", "EL2004"})
	address(t, seg)
	f := seg.Faults()
	f.DropPercent(10)
	f.DropEvery(7)
	f.Delay(time.Millisecond, 3)
	f.CorruptWKC(1 << 30)
	f.CorruptLength(1 << 30)
	if err := f.Disappear(2); err != nil {
		t.Fatal(err)
	}
	tmpl := frameOf(t, phys(wire.BRD, 0, 0, []byte{0}), logical(wire.LRW, 0x10000, make([]byte, 4)))
	frame := make([]byte, len(tmpl))
	allocs := testing.AllocsPerRun(1000, func() {
		copy(frame, tmpl)
		seg.process(frame, true)
	})
	if allocs != 0 {
		t.Errorf("Process with faults armed: %v allocations, want 0", allocs)
	}
}

func BenchmarkProcessWithFaults(b *testing.B) {
	seg := newSeg(b, []string{"EK1100", "EL1004", "EL2004"})
	address(b, seg)
	f := seg.Faults()
	f.DropPercent(1)
	f.DelayRandom(time.Microsecond, time.Millisecond, 2)
	f.CorruptWKC(1 << 30)
	tmpl := frameOf(b, phys(wire.BRD, 0, 0, []byte{0}), logical(wire.LRW, 0x10000, make([]byte, 4)))
	frame := make([]byte, len(tmpl))
	b.ReportAllocs()
	for b.Loop() {
		copy(frame, tmpl)
		seg.process(frame, true)
	}
}

// TestFaultsWhileServing arms and disarms every fault from another
// goroutine while Serve answers frames (run with -race).
func TestFaultsWhileServing(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL1004", "EL3204"})
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- seg.Serve(ctx, b) }()
	stop := make(chan struct{})
	armed := make(chan struct{})
	var rounds atomic.Int64
	go func() {
		defer close(armed)
		f := seg.Faults()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if i > 0 {
				rounds.Add(1)
			}
			f.DropPercent(5)
			f.DropEvery(3)
			f.Delay(time.Microsecond, 2)
			f.CorruptWKC(1)
			f.CorruptLength(1)
			_ = f.Disappear(1)
			_ = f.Return(1)
			_ = f.OffsetJump(0, 10)
			_ = f.DriftJump(0, float64(i%50))
			f.DropOff()
			f.DelayOff()
			f.Counts()
		}
	}()
	rx := make([]byte, link.MaxFrameSize)
	frame := frameOf(t, phys(wire.BRD, 0, 0, []byte{0}))
	for range 200 {
		if err := a.Send(frame); err != nil {
			t.Fatal(err)
		}
		_, _ = a.Recv(rx, time.Now().Add(20*time.Millisecond))
	}
	// A loaded host may not have run the other goroutine yet: let it
	// finish a round before stopping it.
	for deadline := time.Now().Add(5 * time.Second); rounds.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	<-armed
	for deadline := time.Now().Add(5 * time.Second); seg.Stats().Frames < 200 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
	c := seg.Faults().Counts()
	if c.Disappeared != c.Returned || c.Disappeared == 0 {
		t.Errorf("counts %+v", c)
	}
	if st := seg.Stats(); st.Frames != 200 || st.Answered+st.Dropped != 200 {
		t.Errorf("stats %+v", st)
	}
}

// TestReturnIsAPowerCycle configures a device, cuts its power and brings
// it back: its SyncManagers, FMMUs, state, station address and clock are
// those of a new device, while the device behind it, which kept its
// power, keeps its configuration.
func TestReturnIsAPowerCycle(t *testing.T) {
	line := []string{"EK1100", "EL3204", "EL3204"}
	seg := newSeg(t, line)
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

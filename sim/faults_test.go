package sim

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
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
			if !slices.Equal(lost, tt.want) {
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

// TestDropNextSparesAcyclicFrames checks that DropNext takes only frames
// with process data: a master's acyclic traffic passes.
func TestDropNextSparesAcyclicFrames(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004"})
	seg.Faults().DropNext(2)
	if lost := lostAt(answered(t, seg, 5)); len(lost) != 0 {
		t.Fatalf("acyclic frames %v lost", lost)
	}
	if lost := lostAt(answeredLogical(t, seg, 4)); !slices.Equal(lost, []int{0, 1}) {
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
	if !slices.Equal(a, b) {
		t.Error("same seed, different losses")
	}
	if slices.Equal(a, c) {
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

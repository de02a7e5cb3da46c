package master_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
)

func TestOutputsReachDevices(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	bringUp(t, b)
	img, slaves := b.m.Image(), b.m.Slaves()
	cases := []struct {
		name  string
		set   func() error
		dev   int
		want  []byte
		other int // a device that must not change
		still []byte
	}{
		{"EL2004 #1 channel 1", func() error { return img.SetOutputBit(slaves[1], 0, true) }, 1, []byte{0x01}, 2, []byte{0x00}},
		{"EL2004 #2 channel 4", func() error { return img.SetOutputBit(slaves[2], 3, true) }, 2, []byte{0x08}, 1, []byte{0x01}},
		{"EL2004 #1 all", func() error { return img.SetOutputBits(slaves[1], []byte{0x0F}) }, 1, []byte{0x0F}, 2, []byte{0x08}},
		{"EL2004 #2 off", func() error { return img.SetOutputBits(slaves[2], []byte{0x00}) }, 2, []byte{0x00}, 1, []byte{0x0F}},
		{"EL4132 channels", func() error { return img.SetOutputValue(slaves[5], 0, 32, 0x7FFF1234) }, 5, []byte{0x34, 0x12, 0xFF, 0x7F}, 1, []byte{0x0F}},
	}
	for _, c := range cases {
		if err := c.set(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r := b.m.Exchange(); r.Err != nil {
			t.Fatalf("%s: %+v", c.name, r)
		}
		if got := b.devs[c.dev].Outputs(); !bytes.Equal(got, c.want) {
			t.Errorf("%s: device %d outputs % x, want % x", c.name, c.dev, got, c.want)
		}
		if got := b.devs[c.other].Outputs(); !bytes.Equal(got, c.still) {
			t.Errorf("%s: device %d outputs % x, want % x unchanged", c.name, c.other, got, c.still)
		}
	}
	// The two EL2004 share the image's first byte.
	if img.Outputs()[0] != 0x0F {
		t.Errorf("output byte 0 = %#02x, want 0x0f", img.Outputs()[0])
	}
}

func TestInputsReachImage(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	bringUp(t, b)
	img, slaves := b.m.Image(), b.m.Slaves()
	cases := []struct {
		a, b  byte // EL1014 #1 and #2 input pins
		byte0 byte // the image's input byte
		bits1 []bool
		bits2 []bool
	}{
		{0x0, 0x0, 0x00, []bool{false, false, false, false}, []bool{false, false, false, false}},
		{0x1, 0x0, 0x01, []bool{true, false, false, false}, []bool{false, false, false, false}},
		{0x0, 0x8, 0x80, []bool{false, false, false, false}, []bool{false, false, false, true}},
		{0x5, 0xA, 0xA5, []bool{true, false, true, false}, []bool{false, true, false, true}},
		{0xF, 0xF, 0xFF, []bool{true, true, true, true}, []bool{true, true, true, true}},
	}
	for _, c := range cases {
		b.devs[3].SetInputs([]byte{c.a})
		b.devs[4].SetInputs([]byte{c.b})
		if r := b.m.Exchange(); r.Err != nil {
			t.Fatalf("%+v", r)
		}
		if got := img.Inputs()[0]; got != c.byte0 {
			t.Errorf("inputs %#x/%#x: image byte %#02x, want %#02x", c.a, c.b, got, c.byte0)
		}
		for i := range 4 {
			v1, _ := img.InputBit(slaves[3], i)
			v2, _ := img.InputBit(slaves[4], i)
			if v1 != c.bits1[i] || v2 != c.bits2[i] {
				t.Errorf("inputs %#x/%#x: bit %d = %v/%v, want %v/%v", c.a, c.b, i, v1, v2, c.bits1[i], c.bits2[i])
			}
		}
	}
}

func TestLostFrameIsReportedAndCounted(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{CycleTimeout: time.Second})
	bringUp(t, b)
	before := b.m.Stats()

	b.link.dropSends = 1
	r := b.m.Exchange()
	if r.Lost != 1 || !r.FrameLost() || r.Err != master.ErrFrameLost || r.RecvTime != 0 {
		t.Errorf("lost cycle: %+v", r)
	}
	r = b.m.Exchange()
	if r.Err != nil || r.WKC != r.ExpectedWKC {
		t.Errorf("cycle after the loss: %+v", r)
	}
	st := b.m.Stats()
	if st.LostFrames-before.LostFrames != 1 || st.Cycles-before.Cycles != 2 || st.WKCErrors != before.WKCErrors {
		t.Errorf("stats %+v (before %+v), want one lost frame in two cycles", st, before)
	}
	if sent, lost := b.m.FrameTotals(); sent != st.FramesSent || lost != st.LostFrames || st.FramesSent-before.FramesSent != 2 {
		t.Errorf("frame totals %d sent, %d lost; stats %+v (before %+v), want two frames sent in two cycles", sent, lost, st, before)
	}
}

func TestLateAnswerIsDiscardedAsStale(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{CycleTimeout: time.Second})
	bringUp(t, b)
	img, slaves := b.m.Image(), b.m.Slaves()
	before := b.m.Stats()

	// Cycle 1 sends inputs 0x0 and its answer arrives too late.
	b.devs[3].SetInputs([]byte{0x0})
	b.link.holdNext = true
	r1 := b.m.Exchange()
	if r1.Err != master.ErrFrameLost {
		t.Fatalf("cycle with the late answer: %+v", r1)
	}
	// Cycle 2: the late answer comes first and must be discarded; the
	// inputs come from cycle 2's own answer.
	b.devs[3].SetInputs([]byte{0x1})
	r2 := b.m.Exchange()
	if r2.Err != nil || r2.Stale != 1 || r2.WKC != r2.ExpectedWKC {
		t.Errorf("cycle after the late answer: %+v", r2)
	}
	if on, _ := img.InputBit(slaves[3], 0); !on {
		t.Error("inputs were taken from the stale answer")
	}
	st := b.m.Stats()
	if st.StaleFrames-before.StaleFrames != 1 || st.LostFrames-before.LostFrames != 1 {
		t.Errorf("stats %+v (before %+v)", st, before)
	}
}

func TestSplitImageOverSeveralFrames(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{MaxFrameData: 4})
	bringUp(t, b)
	cy := b.m.Cyclic()
	if cy.Frames() != 3 || cy.ExpectedWKC() != 8 {
		t.Fatalf("%d frames with expected WKC %d, want 3 and 8", cy.Frames(), cy.ExpectedWKC())
	}
	img, slaves := b.m.Image(), b.m.Slaves()
	_ = img.SetOutputBit(slaves[2], 1, true)
	_ = img.SetOutputValue(slaves[5], 16, 16, 0x4321)
	b.devs[4].SetInputs([]byte{0x6})
	for range 2 {
		if r := b.m.Exchange(); r.Err != nil || r.Frames != 3 || r.WKC != 8 {
			t.Fatalf("%+v", r)
		}
	}
	if got := b.devs[2].Outputs(); !bytes.Equal(got, []byte{0x02}) {
		t.Errorf("EL2004 #2 outputs % x", got)
	}
	if got := b.devs[5].Outputs(); !bytes.Equal(got, []byte{0, 0, 0x21, 0x43}) {
		t.Errorf("EL4132 outputs % x", got)
	}
	if v, _ := img.InputValue(slaves[4], 0, 4); v != 0x6 {
		t.Errorf("EL1014 #2 inputs %#x", v)
	}
}

func TestExchangeDoesNotAllocate(t *testing.T) {
	if master.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	b := newBench(t, referenceSet, master.Config{})
	bringUp(t, b)
	img, s := b.m.Image(), b.m.Slaves()[1]
	n, failed := 0, 0
	allocs := testing.AllocsPerRun(5000, func() {
		n++
		_ = img.SetOutputBit(s, 0, n&1 != 0)
		if r := b.m.Exchange(); r.Err != nil {
			failed++
		}
	})
	if allocs != 0 {
		t.Errorf("Exchange over the pipe and simulator allocates %v times per cycle", allocs)
	}
	if failed > n/100 {
		t.Errorf("%d of %d cycles failed", failed, n)
	}
}

func BenchmarkExchange(b *testing.B) {
	bn := newBench(b, referenceSet, master.Config{})
	bringUp(b, bn)
	img, s := bn.m.Image(), bn.m.Slaves()[1]
	b.ReportAllocs()
	n, failed := 0, 0
	for b.Loop() {
		n++
		_ = img.SetOutputBit(s, 0, n&1 != 0)
		if r := bn.m.Exchange(); r.Err != nil {
			failed++
		}
	}
	b.ReportMetric(float64(failed)/float64(n), "failed/op")
}

func TestCycleSeesSlaveLeaveOP(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	bringUp(t, b)
	ctx := context.Background()
	el1014 := b.m.Slaves()[3]
	if err := b.m.RequestSlaveState(ctx, el1014, esc.StateSafeOp); err != nil {
		t.Fatal(err)
	}
	r := b.m.Exchange()
	if r.Responding != 7 || r.ALStates != uint8(esc.StateOp|esc.StateSafeOp) || r.AllInState(7, esc.StateOp) {
		t.Errorf("AL status read %d slaves, states %#x; want 7 and 0x0c", r.Responding, r.ALStates)
	}
	if err := b.m.ReadStates(ctx); err != nil {
		t.Fatal(err)
	}
	for i, s := range b.m.Slaves() {
		want := esc.StateOp
		if i == 3 {
			want = esc.StateSafeOp
		}
		if s.State() != want {
			t.Errorf("%v in %v, want %v", s, s.State(), want)
		}
	}
	if err := b.m.RequestSlaveState(ctx, el1014, esc.StateOp); err != nil {
		t.Fatal(err)
	}
	if r := b.m.Exchange(); !r.AllInState(7, esc.StateOp) {
		t.Errorf("after going back to OP: %+v", r)
	}
}

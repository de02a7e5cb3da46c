package master_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/sim"
)

// referenceSet is the acontis reference segment.
var referenceSet = []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}

const realSII = "../testdata/real-hw/sii"

// bench is a master talking over an in-process pipe to a simulated segment
// served by its own goroutine.
type bench struct {
	m    *master.Master
	seg  *sim.Segment
	devs []*sim.Device
	link *faultyLink
	logs *bytes.Buffer
}

// newBench builds the devices, serves them and returns a master on the
// other end of the pipe (not yet scanned).
func newBench(t testing.TB, devices []string, cfg master.Config, opts ...sim.Option) *bench {
	t.Helper()
	devs, err := sim.ParseDevices(devices)
	if err != nil {
		t.Fatal(err)
	}
	seg := sim.NewSegment(devs, opts...)
	masterEnd, simEnd := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = seg.Serve(ctx, simEnd)
	}()
	b := &bench{seg: seg, devs: devs, link: &faultyLink{Link: masterEnd}, logs: &bytes.Buffer{}}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: b.logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// Generous timeouts: the tests share two cores with other packages'
	// tests, and a frame that is late only because the process was not
	// scheduled must not fail them. Tests of lost frames lose them on purpose.
	if cfg.CycleTimeout == 0 {
		cfg.CycleTimeout = 2 * time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	m, err := master.New(b.link, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	b.m = m
	t.Cleanup(func() {
		_ = m.Close()
		cancel()
		_ = simEnd.Close()
		wg.Wait()
		if t.Failed() || os.Getenv("MASTER_LOG") != "" {
			t.Logf("master log:\n%s", b.logs.String())
		}
	})
	return b
}

// lockedWriter serialises log writes (the handler may be shared).
type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// faultyLink wraps the master's end of the pipe to lose or delay frames on
// demand. It is used from the master's goroutine only.
type faultyLink struct {
	link.Link
	dropSends int      // swallow this many sends: the frame never reaches the segment
	holdNext  bool     // keep the next answer back and report a timeout instead
	held      []byte   // an answer kept back, delivered before the next one (late, stale)
	record    bool     // keep a copy of every frame sent in sent
	sent      [][]byte // frames sent while record was on
}

func (f *faultyLink) Send(frame []byte) error {
	if f.record {
		f.sent = append(f.sent, append([]byte(nil), frame...))
	}
	if f.dropSends > 0 {
		f.dropSends--
		return nil
	}
	return f.Link.Send(frame)
}

func (f *faultyLink) Recv(buf []byte, deadline time.Time) (int, error) {
	if f.held != nil && !f.holdNext {
		n := copy(buf, f.held)
		f.held = nil
		return n, nil
	}
	n, err := f.Link.Recv(buf, deadline)
	if err == nil && f.holdNext {
		f.holdNext = false
		f.held = append([]byte(nil), buf[:n]...)
		return 0, link.ErrTimeout
	}
	return n, err
}

func bringUp(t testing.TB, b *bench) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.m.BringUp(ctx); err != nil {
		t.Fatalf("BringUp: %v", err)
	}
}

func TestBringUpReferenceSet(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{ExpectedSlaves: len(referenceSet)})
	bringUp(t, b)
	slaves := b.m.Slaves()
	if len(slaves) != len(referenceSet) {
		t.Fatalf("%d slaves, want %d", len(slaves), len(referenceSet))
	}
	want := []struct {
		name    string
		product uint32
		in, out int
		parent  int
	}{
		{"EK1100", 0x044C2C52, 0, 0, master.NoParent},
		{"EL2004", 0x07D43052, 0, 4, 0},
		{"EL2004", 0x07D43052, 0, 4, 1},
		{"EL1014", 0x03F63052, 4, 0, 2},
		{"EL1014", 0x03F63052, 4, 0, 3},
		{"EL4132", 0x10243052, 0, 32, 4},
		{"EK1110", 0x04562C52, 0, 0, 5},
	}
	for i, s := range slaves {
		w := want[i]
		if s.Position != i || s.StationAddress != uint16(0x1001+i) {
			t.Errorf("slave %d: position %d address %#04x", i, s.Position, s.StationAddress)
		}
		if s.OrderCode != w.name || s.Identity.VendorID != 2 || s.Identity.ProductCode != w.product {
			t.Errorf("slave %d: %s vendor %#x product %#x, want %s 2 %#x", i, s.OrderCode,
				s.Identity.VendorID, s.Identity.ProductCode, w.name, w.product)
		}
		if s.InputBits != w.in || s.OutputBits != w.out {
			t.Errorf("%v: %d in / %d out bits, want %d / %d", s, s.InputBits, s.OutputBits, w.in, w.out)
		}
		if s.Parent != w.parent {
			t.Errorf("%v: parent %d, want %d (ports %v)", s, s.Parent, w.parent, s.Ports)
		}
		if s.State() != esc.StateOp || b.devs[i].State() != esc.StateOp {
			t.Errorf("%v: master sees %v, device is in %v", s, s.State(), b.devs[i].State())
		}
	}
	if !slaves[0].DC {
		t.Error("EK1100 should support DC")
	}
	if slaves[5].HasMailbox != true || slaves[5].Mailbox.ReceiveSize == 0 {
		t.Errorf("EL4132 mailbox %+v", slaves[5].Mailbox)
	}
	// Expected WKC: three slaves with outputs (+2), two with inputs (+1).
	cy := b.m.Cyclic()
	if cy.ExpectedWKC() != 8 || cy.Frames() != 1 {
		t.Errorf("expected WKC %d in %d frames, want 8 in 1", cy.ExpectedWKC(), cy.Frames())
	}
	for i := range 10 {
		r := b.m.Exchange()
		if r.Cycle != uint64(i+1) || r.Err != nil || r.WKC != 8 || r.Lost != 0 || !r.AllInState(7, esc.StateOp) || r.RTT() <= 0 {
			t.Fatalf("cycle %+v", r)
		}
	}
	if st := b.m.Stats(); st.Cycles != 10 || st.LostFrames != 0 || st.WKCErrors != 0 {
		t.Errorf("stats %+v", st)
	}
	for _, step := range []string{"bring-up: scanned", "bring-up: PREOP", "bring-up: SAFEOP", "bring-up: OP"} {
		if !strings.Contains(b.logs.String(), step) {
			t.Errorf("log lacks %q", step)
		}
	}
}

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

func TestSlaveCountMismatch(t *testing.T) {
	for _, expected := range []int{5, 8} {
		b := newBench(t, referenceSet, master.Config{ExpectedSlaves: expected})
		_, err := b.m.Scan(context.Background())
		var ce *master.SlaveCountError
		if !errors.As(err, &ce) || ce.Expected != expected || ce.Found != 7 {
			t.Fatalf("expected %d: err %v, want *SlaveCountError{%d, 7}", expected, err, expected)
		}
		if !strings.Contains(err.Error(), "found 7") || !strings.Contains(err.Error(), fmt.Sprint("expects ", expected)) {
			t.Errorf("message %q should name both counts", err)
		}
	}
}

func TestSlaveRefusesState(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	ctx := context.Background()
	if _, err := b.m.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.m.RequestState(ctx, esc.StatePreOp); err != nil {
		t.Fatal(err)
	}
	// Misconfigure the EL4132: claim 48 output bits where its PDOs have
	// 32, so the master sizes SyncManager 2 at 6 bytes instead of 4.
	el4132 := b.m.Slaves()[5]
	for i := range el4132.SyncManagers {
		if el4132.SyncManagers[i].Bits == 32 {
			el4132.SyncManagers[i].Bits = 48
		}
	}
	err := b.m.RequestState(ctx, esc.StateSafeOp)
	var se *master.ALStateError
	if !errors.As(err, &se) {
		t.Fatalf("err %v, want *ALStateError", err)
	}
	want := master.ALStateError{Position: 5, Address: 0x1006, Name: "EL4132", From: esc.StatePreOp,
		Requested: esc.StateSafeOp, Current: esc.StatePreOp, Code: esc.ALInvalidOutputConfig}
	if *se != want {
		t.Errorf("error %+v, want %+v", *se, want)
	}
	if !strings.Contains(err.Error(), "invalid output configuration") {
		t.Errorf("message %q lacks the code's name", err)
	}
	// The error was acknowledged; the other slaves went on to SAFEOP.
	if st, code := b.devs[5].ALStatus(); st.Error || st.State != esc.StatePreOp {
		t.Errorf("EL4132 status %v code %v after the refusal, want PREOP acknowledged", st, code)
	}
	for i, d := range b.devs {
		if i != 5 && d.State() != esc.StateSafeOp {
			t.Errorf("device %d (%s) in %v, want SAFEOP", i, d.Name(), d.State())
		}
	}
}

func TestBadSIIChecksumWarns(t *testing.T) {
	img, err := os.ReadFile(filepath.Join(realSII, "el2004.bin"))
	if err != nil {
		t.Fatal(err)
	}
	img[0x0E] ^= 0xFF // header checksum
	path := filepath.Join(t.TempDir(), "el2004-bad-crc.bin")
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	b := newBench(t, []string{filepath.Join(realSII, "ek1100.bin"), path}, master.Config{})
	bringUp(t, b)
	s := b.m.Slaves()[1]
	if s.OrderCode != "EL2004" || s.OutputBits != 4 {
		t.Errorf("slave with bad checksum: %s, %d output bits", s.OrderCode, s.OutputBits)
	}
	logs := b.logs.String()
	if !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "checksum") || !strings.Contains(logs, "slave 1") {
		t.Errorf("no checksum warning for slave 1 in log:\n%s", logs)
	}
	if strings.Count(logs, "checksum mismatch") != 1 {
		t.Errorf("the good image of slave 0 was also reported:\n%s", logs)
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

func TestBringUpRealSIIImages(t *testing.T) {
	var devices []string
	for _, f := range []string{"ek1100.bin", "el2004.bin", "el2828.bin", "el2889.bin"} {
		devices = append(devices, filepath.Join(realSII, f))
	}
	b := newBench(t, devices, master.Config{ExpectedSlaves: 4})
	bringUp(t, b)
	slaves, img := b.m.Slaves(), b.m.Image()
	wantOut := []int{0, 4, 8, 16}
	for i, s := range slaves {
		if s.OutputBits != wantOut[i] || s.State() != esc.StateOp {
			t.Errorf("%v: %d output bits in %v, want %d in OP", s, s.OutputBits, s.State(), wantOut[i])
		}
	}
	if b.m.Cyclic().ExpectedWKC() != 6 {
		t.Errorf("expected WKC %d, want 6", b.m.Cyclic().ExpectedWKC())
	}
	// EL2004 bits 0–3, EL2828 byte 1, EL2889 bytes 2–3.
	_ = img.SetOutputBits(slaves[1], []byte{0x09})
	_ = img.SetOutputValue(slaves[2], 0, 8, 0xA5)
	_ = img.SetOutputValue(slaves[3], 0, 16, 0xBEEF)
	if r := b.m.Exchange(); r.Err != nil {
		t.Fatalf("%+v", r)
	}
	if !bytes.Equal(img.Outputs(), []byte{0x09, 0xA5, 0xEF, 0xBE}) {
		t.Errorf("image outputs % x", img.Outputs())
	}
	for i, want := range [][]byte{nil, {0x09}, {0xA5}, {0xEF, 0xBE}} {
		if i == 0 {
			continue
		}
		if got := b.devs[i].Register(0x0F00, len(want)); !bytes.Equal(got, want) {
			t.Errorf("%s: output register 0x0f00 % x, want % x", b.devs[i].Name(), got, want)
		}
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

func TestStateTimeout(t *testing.T) {
	// The EL4132's controller takes 100000 frames per state change.
	b := newBench(t, []string{"EK1100", "EL4132"}, master.Config{StateTimeout: 300 * time.Millisecond},
		sim.WithStateChangeDelay(100000))
	ctx := context.Background()
	if _, err := b.m.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	err := b.m.RequestState(ctx, esc.StatePreOp)
	var te *master.StateTimeoutError
	if !errors.As(err, &te) || te.Position != 1 || te.Name != "EL4132" || te.Requested != esc.StatePreOp ||
		te.Current.State != esc.StateInit {
		t.Fatalf("err %v, want *StateTimeoutError for the EL4132 stuck in INIT", err)
	}
	var se *master.ALStateError
	if errors.As(err, &se) {
		t.Errorf("a slow slave is not a refusing one: %v", err)
	}
	if b.devs[0].State() != esc.StatePreOp {
		t.Errorf("EK1100 in %v, want PREOP", b.devs[0].State())
	}
}

func TestCloseTakesSlavesToInit(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	bringUp(t, b)
	if err := b.m.Close(); err != nil {
		t.Fatal(err)
	}
	// Close requested INIT from every slave (devices with an application
	// controller carry it out on their next frames, which no longer come).
	for _, d := range b.devs {
		if ctl := d.Register(uint16(esc.RegALControl), 2); ctl[0] != byte(esc.StateInit) {
			t.Errorf("%s: AL control %#02x after Close, want INIT", d.Name(), ctl[0])
		}
	}
	if err := b.m.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := b.m.Scan(context.Background()); !errors.Is(err, master.ErrClosed) {
		t.Errorf("Scan after Close: %v", err)
	}
	if r := b.m.Exchange(); r.Err == nil {
		t.Error("Exchange after Close succeeded")
	}
}

func TestOperationsBeforeScan(t *testing.T) {
	b := newBench(t, referenceSet, master.Config{})
	ctx := context.Background()
	if err := b.m.RequestState(ctx, esc.StateOp); !errors.Is(err, master.ErrNotScanned) {
		t.Errorf("RequestState: %v", err)
	}
	if _, err := b.m.MapProcessImage(); !errors.Is(err, master.ErrNotScanned) {
		t.Errorf("MapProcessImage: %v", err)
	}
	if r := b.m.Exchange(); r.Err != master.ErrNotMapped {
		t.Errorf("Exchange: %+v", r)
	}
	if b.m.Image() != nil || b.m.Cyclic() != nil {
		t.Error("image before mapping")
	}
}

func TestRequestStateAcknowledgesEarlierErrors(t *testing.T) {
	// Application controllers that decide after 1 and after 5 frames: the
	// master must wait for the acknowledge to be taken, not overwrite it.
	for _, delay := range []int{1, 5} {
		t.Run(fmt.Sprint("ESM delay ", delay), func(t *testing.T) { testAcknowledge(t, delay) })
	}
}

func testAcknowledge(t *testing.T, delay int) {
	b := newBench(t, referenceSet, master.Config{}, sim.WithStateChangeDelay(delay))
	bringUp(t, b)
	ctx := context.Background()
	cases := []struct {
		name    string
		slave   int
		control uint16 // written behind the master's back
	}{
		// An EL2004 in device emulation mirrors AL control, acknowledge
		// bit included: it now shows SAFEOP+ERR.
		{"device emulation", 1, uint16(esc.StateSafeOp) | 0x10},
		// The EL4132's controller refuses BOOT (no bootstrap mailbox):
		// OP+ERR with code 0x0013.
		{"application controller", 5, uint16(esc.StateBootstrap)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := b.m.Slaves()[c.slave]
			ctl := []byte{byte(c.control), byte(c.control >> 8)}
			if err := b.m.Bus().FPWR(ctx, s.StationAddress, uint16(esc.RegALControl), ctl); err != nil {
				t.Fatal(err)
			}
			for range 20 { // frames pass until the device has decided
				if st, _ := b.devs[c.slave].ALStatus(); st.Error {
					break
				}
				_ = b.m.Bus().FPRD(ctx, s.StationAddress, uint16(esc.RegALStatus), make([]byte, 2))
			}
			if st, _ := b.devs[c.slave].ALStatus(); !st.Error {
				t.Fatalf("device shows no error indication: %v", st)
			}
			if err := b.m.RequestState(ctx, esc.StateOp); err != nil {
				t.Fatal(err)
			}
			if st, code := b.devs[c.slave].ALStatus(); st.Error || st.State != esc.StateOp {
				t.Errorf("device %v code %v, want OP without error", st, code)
			}
			if !strings.Contains(b.logs.String(), "acknowledging error indication") {
				t.Error("the acknowledge was not logged")
			}
			if r := b.m.Exchange(); !r.AllInState(7, esc.StateOp) || r.Err != nil {
				t.Errorf("cycle after the acknowledge: %+v", r)
			}
		})
	}
}

func TestBringUpWithSlowDevices(t *testing.T) {
	// Controllers that take 5 frames per state change and EEPROMs that
	// stay busy for 4 frames per read: every wait of the master is a poll.
	b := newBench(t, referenceSet, master.Config{}, sim.WithStateChangeDelay(5), sim.WithSIIBusyFrames(4))
	bringUp(t, b)
	for i, d := range b.devs {
		if d.State() != esc.StateOp {
			t.Errorf("device %d (%s) in %v", i, d.Name(), d.State())
		}
	}
	if r := b.m.Exchange(); r.Err != nil || !r.AllInState(7, esc.StateOp) {
		t.Errorf("%+v", r)
	}
}

package cia402

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
)

// fakeProcess is one slave's process data: inputs and outputs as bytes.
type fakeProcess struct {
	in, out []byte
}

var errRange = errors.New("bit range")

func bitsGet(b []byte, bit, n int) (uint64, error) {
	if bit < 0 || n < 1 || n > 64 || bit+n > len(b)*8 {
		return 0, errRange
	}
	var v uint64
	for i := range n {
		if b[(bit+i)/8]&(1<<((bit+i)%8)) != 0 {
			v |= 1 << i
		}
	}
	return v, nil
}

func bitsSet(b []byte, bit, n int, v uint64) error {
	if bit < 0 || n < 1 || n > 64 || bit+n > len(b)*8 {
		return errRange
	}
	for i := range n {
		mask := byte(1 << ((bit + i) % 8))
		if v&(1<<i) != 0 {
			b[(bit+i)/8] |= mask
		} else {
			b[(bit+i)/8] &^= mask
		}
	}
	return nil
}

func (p *fakeProcess) InputValue(bit, n int) (uint64, error) { return bitsGet(p.in, bit, n) }
func (p *fakeProcess) SetOutputValue(bit, n int, v uint64) error {
	return bitsSet(p.out, bit, n, v)
}

// layout is a typical AKD-like mapping: RxPDO controlword, mode, target;
// TxPDO statusword, mode display, position, velocity, torque, error code.
type layout struct {
	out, in map[uint16]Field
}

func fullLayout(mode Mode) layout {
	target, bits := mode.target()
	return layout{
		out: map[uint16]Field{ObjControlword: {0, 16}, ObjModeOfOp: {16, 8}, target: {24, bits}},
		in: map[uint16]Field{ObjStatusword: {0, 16}, ObjModeDisplay: {16, 8}, ObjPositionActual: {24, 32},
			ObjVelocityActual: {56, 32}, ObjTorqueActual: {88, 16}, ObjErrorCode: {104, 16}},
	}
}

func (l layout) entries() EntryFuncs {
	return EntryFuncs{
		Output: func(i uint16, s uint8) (Field, bool) { f, ok := l.out[i]; return f, ok && s == 0 },
		Input:  func(i uint16, s uint8) (Field, bool) { f, ok := l.in[i]; return f, ok && s == 0 },
	}
}

// fakeDrive answers the controlword like a CiA 402 drive, one exchange at a
// time, and faults when the target velocity jumps by more than maxStep.
type fakeDrive struct {
	p       *fakeProcess
	l       layout
	state   state.State
	lastCW  state.Controlword
	pos     int32
	vel     int32
	code    uint16
	maxStep int64 // 0: no limit
	sticky  bool  // a reset does not clear the fault
	resets  int   // rising edges of bit 7 seen
}

var stateWords = map[state.State]state.Statusword{
	state.NotReadyToSwitchOn: swNotReady, state.SwitchOnDisabled: swDisabled, state.ReadyToSwitchOn: swReady,
	state.SwitchedOn: swSwitchedOn, state.OperationEnabled: swEnabled, state.QuickStopActive: swQuickStop,
	state.FaultReactionActive: swFaultReaction, state.Fault: swFault,
}

func (f *fakeDrive) publish() {
	f.set(ObjStatusword, uint64(stateWords[f.state]))
	f.set(ObjPositionActual, uint64(uint32(f.pos)))
	f.set(ObjVelocityActual, uint64(uint32(f.vel)))
	code := uint16(0)
	if f.state.Faulted() {
		code = f.code
	}
	f.set(ObjErrorCode, uint64(code))
	mode, _ := bitsGet(f.p.out, f.l.out[ObjModeOfOp].Bit, 8)
	f.set(ObjModeDisplay, mode)
}

func (f *fakeDrive) set(index uint16, v uint64) {
	if fl, ok := f.l.in[index]; ok {
		_ = bitsSet(f.p.in, fl.Bit, fl.Bits, v)
	}
}

func (f *fakeDrive) fault(code uint16) {
	f.state, f.code = state.Fault, code
}

// exchange delivers the outputs to the drive and its inputs back.
func (f *fakeDrive) exchange(dt time.Duration) {
	raw, _ := bitsGet(f.p.out, f.l.out[ObjControlword].Bit, 16)
	cw := state.Controlword(raw)
	edge := cw&state.CWFaultReset != 0 && f.lastCW&state.CWFaultReset == 0
	f.lastCW = cw
	switch {
	case f.state == state.Fault:
		if edge {
			f.resets++
			if !f.sticky {
				f.state = state.SwitchOnDisabled
			}
		}
	case f.state == state.NotReadyToSwitchOn:
		f.state = state.SwitchOnDisabled
	case cw&state.CWEnableVoltage == 0:
		f.state = state.SwitchOnDisabled
	case f.state == state.SwitchOnDisabled && cw&0x87 == 0x06:
		f.state = state.ReadyToSwitchOn
	case f.state == state.ReadyToSwitchOn && cw&0x8F == 0x07:
		f.state = state.SwitchedOn
	case f.state == state.SwitchedOn && cw&0x8F == 0x0F:
		f.state = state.OperationEnabled
	case f.state == state.OperationEnabled:
		if fl, ok := f.l.out[ObjTargetVelocity]; ok {
			raw, _ := bitsGet(f.p.out, fl.Bit, 32)
			v := int32(raw)
			if step := int64(v) - int64(f.vel); f.maxStep > 0 && (step > f.maxStep || -step > f.maxStep) {
				f.fault(0x8611)
				break
			}
			f.vel = v
			f.pos += int32(float64(v) * dt.Seconds())
		}
	}
	f.publish()
}

func newRig(t testing.TB, cfg Config) (*Drive, *fakeDrive) {
	t.Helper()
	p := &fakeProcess{in: make([]byte, 16), out: make([]byte, 8)}
	l := fullLayout(cfg.Mode)
	fd := &fakeDrive{p: p, l: l, state: state.NotReadyToSwitchOn}
	d, err := Bind(p, l.entries(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	fd.publish()
	return d, fd
}

// run cycles the rig n times at period dt from time *now and returns the
// events.
func run(d *Drive, fd *fakeDrive, now *int64, dt time.Duration, n int) []Event {
	var evs []Event
	for range n {
		if ev, ok := d.Cycle(*now); ok {
			evs = append(evs, ev)
		}
		fd.exchange(dt)
		*now += int64(dt)
	}
	return evs
}

func TestDriveReachesOperationEnabled(t *testing.T) {
	t.Parallel()
	d, fd := newRig(t, Config{Mode: ModeCSV, Profile: Constant(100)})
	var now int64
	evs := run(d, fd, &now, time.Millisecond, 5)
	want := []Event{
		{Kind: EventStateChanged, From: state.Unknown, State: state.NotReadyToSwitchOn},
		{Kind: EventStateChanged, From: state.NotReadyToSwitchOn, State: state.SwitchOnDisabled},
		{Kind: EventStateChanged, From: state.SwitchOnDisabled, State: state.ReadyToSwitchOn},
		{Kind: EventStateChanged, From: state.ReadyToSwitchOn, State: state.SwitchedOn},
		{Kind: EventOperationEnabled, From: state.SwitchedOn, State: state.OperationEnabled},
	}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Errorf("events:\n got %v\nwant %v", evs, want)
	}
	if d.State() != state.OperationEnabled {
		t.Errorf("state %v", d.State())
	}
	if mode, _ := bitsGet(fd.p.out, 16, 8); Mode(mode) != ModeCSV {
		t.Errorf("mode output %d, want 9", mode)
	}
	if d.SetupWrites() != nil {
		t.Errorf("SetupWrites = %v with 0x6060 mapped", d.SetupWrites())
	}
}

func TestDriveTargets(t *testing.T) {
	t.Parallel()
	ms := int64(time.Millisecond)
	tests := []struct {
		name     string
		cfg      Config
		startPos int32
		// targets written in cycles 1..n (the drive is enabled in the
		// 5th cycle, see TestDriveReachesOperationEnabled).
		want []int64
	}{
		{"csv ramp after two settle cycles", Config{Mode: ModeCSV, SettleCycles: 2, Profile: Ramp(0, 1000, 10*time.Millisecond)}, 0,
			[]int64{0, 0, 0, 0, 0, 0, 0, 100, 200}},
		{"csv without settling starts at once", Config{Mode: ModeCSV, Profile: Ramp(0, 1000, 10*time.Millisecond)}, 0,
			[]int64{0, 0, 0, 0, 0, 100, 200}},
		{"cst saturates to int16", Config{Mode: ModeCST, Profile: Constant(40000)}, 0,
			[]int64{0, 0, 0, 0, 32767, 32767}},
		{"cst sine", Config{Mode: ModeCST, Profile: Sine(0, 300, 4*time.Millisecond)}, 0,
			[]int64{0, 0, 0, 0, 0, 300, 0, -300, 0}},
		{"csp holds the actual position, then adds the profile", Config{Mode: ModeCSP, SettleCycles: 1,
			Profile: Ramp(0, 50, 5*time.Millisecond)}, -5000,
			[]int64{-5000, -5000, -5000, -5000, -5000, -5000, -4990, -4980}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, fd := newRig(t, tt.cfg)
			fd.pos = tt.startPos
			fd.publish()
			now := 7 * ms // any monotonic origin
			for i, w := range tt.want {
				d.Cycle(now)
				if got := d.Target(); got != w {
					t.Errorf("cycle %d: target %d, want %d", i+1, got, w)
				}
				bits := 32
				if tt.cfg.Mode == ModeCST {
					bits = 16
				}
				raw, _ := bitsGet(fd.p.out, 24, bits)
				if got := int64(raw) << (64 - bits) >> (64 - bits); got != w {
					t.Errorf("cycle %d: target in the image %d, want %d", i+1, got, w)
				}
				fd.exchange(time.Millisecond)
				now += ms
			}
		})
	}
}

func TestDriveFaultManualReset(t *testing.T) {
	t.Parallel()
	d, fd := newRig(t, Config{Mode: ModeCSV, Profile: Constant(0)})
	var now int64
	run(d, fd, &now, time.Millisecond, 6)
	fd.fault(0x7500)
	fd.publish()
	evs := run(d, fd, &now, time.Millisecond, 20)
	want := []Event{{Kind: EventFault, From: state.OperationEnabled, State: state.Fault, ErrorCode: 0x7500}}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Fatalf("events:\n got %v\nwant %v", evs, want)
	}
	if d.State() != state.Fault || d.ErrorCode() != 0x7500 || fd.resets != 0 {
		t.Fatalf("state %v code %#x resets %d: a manual drive must stay in fault", d.State(), d.ErrorCode(), fd.resets)
	}
	d.ResetFault()
	evs = run(d, fd, &now, time.Millisecond, 6)
	want = []Event{
		{Kind: EventFaultCleared, From: state.Fault, State: state.SwitchOnDisabled},
		{Kind: EventStateChanged, From: state.SwitchOnDisabled, State: state.ReadyToSwitchOn},
		{Kind: EventStateChanged, From: state.ReadyToSwitchOn, State: state.SwitchedOn},
		{Kind: EventOperationEnabled, From: state.SwitchedOn, State: state.OperationEnabled},
	}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Errorf("after ResetFault:\n got %v\nwant %v", evs, want)
	}
	if fd.resets != 1 || d.ErrorCode() != 0 {
		t.Errorf("resets %d, error code %#x; want one reset and no code", fd.resets, d.ErrorCode())
	}
}

func TestDriveResetRequestOutsideFaultIsDropped(t *testing.T) {
	t.Parallel()
	d, fd := newRig(t, Config{Mode: ModeCSV, Profile: Constant(0)})
	var now int64
	run(d, fd, &now, time.Millisecond, 6)
	d.ResetFault() // nothing to reset
	run(d, fd, &now, time.Millisecond, 1)
	fd.fault(0x2310)
	fd.publish()
	run(d, fd, &now, time.Millisecond, 10)
	if fd.resets != 0 || d.State() != state.Fault {
		t.Errorf("a stale request reset a later fault: resets %d, state %v", fd.resets, d.State())
	}
}

func TestDriveAutoResetAfterAVelocityJump(t *testing.T) {
	t.Parallel()
	// The fake drive faults when the target velocity jumps by more than
	// 500 counts/s in one cycle: a constant 1000 trips it at once.
	d, fd := newRig(t, Config{Mode: ModeCSV, Profile: Constant(1000), FaultReset: ResetAuto, RetryCycles: 3, PulseCycles: 1})
	fd.maxStep = 500
	var now int64
	evs := run(d, fd, &now, time.Millisecond, 30)
	var faults, cleared int
	for _, ev := range evs {
		switch ev.Kind {
		case EventFault:
			faults++
			if ev.ErrorCode != 0x8611 {
				t.Errorf("fault event %+v lacks the error code 0x8611", ev)
			}
		case EventFaultCleared:
			cleared++
		}
	}
	if faults < 2 || cleared < 2 || fd.resets < 2 {
		t.Errorf("auto reset: %d faults, %d cleared, %d resets; want each at least 2\n%v", faults, cleared, fd.resets, evs)
	}
}

func TestDriveAutoResetRetriesAPersistingFault(t *testing.T) {
	t.Parallel()
	d, fd := newRig(t, Config{Mode: ModeCSV, Profile: Constant(0), FaultReset: ResetAuto, PulseCycles: 2, RetryCycles: 5})
	fd.sticky = true
	fd.fault(0x5530)
	fd.publish()
	var now int64
	run(d, fd, &now, time.Millisecond, 22)
	// Edges at cycle 2 (after one 0x00), then every 2 high + 5 low
	// cycles: 9, 16.
	if fd.resets != 3 {
		t.Errorf("%d reset edges in 22 cycles, want 3", fd.resets)
	}
}

func TestBindErrors(t *testing.T) {
	t.Parallel()
	without := func(mode Mode, out, in uint16) layout {
		l := fullLayout(mode)
		delete(l.out, out)
		delete(l.in, in)
		return l
	}
	resized := fullLayout(ModeCSV)
	resized.in[ObjStatusword] = Field{0, 8}
	outside := fullLayout(ModeCSV)
	outside.in[ObjErrorCode] = Field{200, 16}
	tests := []struct {
		name string
		l    layout
		cfg  Config
		want []string
	}{
		{"no controlword", without(ModeCSV, ObjControlword, 0), Config{Mode: ModeCSV, Profile: Constant(0)},
			[]string{"cia402: controlword 0x6040:00 (16 bits) is not mapped in the RxPDOs: required"}},
		{"no statusword and no target", without(ModeCST, ObjTargetTorque, ObjStatusword), Config{Mode: ModeCST, Profile: Constant(0)},
			[]string{"statusword 0x6041:00 (16 bits) is not mapped in the TxPDOs", "target torque 0x6071:00 (16 bits) is not mapped in the RxPDOs: required in cst"}},
		{"csv target missing", without(ModeCSV, ObjTargetVelocity, 0), Config{Mode: ModeCSV, Profile: Constant(0)},
			[]string{"target velocity 0x60FF:00"}},
		{"csp needs the actual position", without(ModeCSP, 0, ObjPositionActual), Config{Mode: ModeCSP, Profile: Constant(0)},
			[]string{"position actual value 0x6064:00 (32 bits) is not mapped in the TxPDOs: required in csp"}},
		{"wrong width", resized, Config{Mode: ModeCSV, Profile: Constant(0)},
			[]string{"statusword 0x6041:00 is mapped with 8 bits in the TxPDOs", "want 16"}},
		{"field outside the slave's data", outside, Config{Mode: ModeCSV, Profile: Constant(0)},
			[]string{"cia402: input at bit 200 (16 bits): bit range"}},
		{"not a cyclic mode", fullLayout(ModeCSV), Config{Mode: ModeProfilePosition, Profile: Constant(0)},
			[]string{"mode pp: must be csp, csv or cst"}},
		{"bad profile", fullLayout(ModeCSV), Config{Mode: ModeCSV, Profile: Sine(0, 1, 0)},
			[]string{"sine period 0s: must be positive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &fakeProcess{in: make([]byte, 16), out: make([]byte, 8)}
			_, err := Bind(p, tt.l.entries(), tt.cfg)
			if err == nil {
				t.Fatal("Bind succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	var moe *MissingObjectError
	_, err := Bind(&fakeProcess{in: make([]byte, 16), out: make([]byte, 8)},
		without(ModeCSV, ObjControlword, 0).entries(), Config{Mode: ModeCSV, Profile: Constant(0)})
	if !errors.As(err, &moe) || moe.Index != ObjControlword || moe.PDO != "RxPDO" {
		t.Errorf("err = %#v, want a *MissingObjectError for 0x6040", err)
	}
}

func TestBindWithoutModeObjectNeedsAnSDOWrite(t *testing.T) {
	t.Parallel()
	l := fullLayout(ModeCST)
	delete(l.out, ObjModeOfOp)
	delete(l.in, ObjModeDisplay)
	delete(l.in, ObjErrorCode)
	p := &fakeProcess{in: make([]byte, 16), out: make([]byte, 8)}
	d, err := Bind(p, l.entries(), Config{Mode: ModeCST, Profile: Constant(0)})
	if err != nil {
		t.Fatal(err)
	}
	want := []SDOWrite{{Index: 0x6060, SubIndex: 0, Bits: 8, Value: 10}}
	if got := d.SetupWrites(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("SetupWrites = %v, want %v", got, want)
	}
}

// genericImage stands in for the master's process image, addressed per
// slave.
type genericImage struct{ slaves map[int]*fakeProcess }

func (g genericImage) InputValue(s int, bit, n int) (uint64, error) {
	return g.slaves[s].InputValue(bit, n)
}
func (g genericImage) SetOutputValue(s int, bit, n int, v uint64) error {
	return g.slaves[s].SetOutputValue(bit, n, v)
}

func TestSlaveImage(t *testing.T) {
	t.Parallel()
	a := &fakeProcess{in: []byte{0x34, 0x12}, out: make([]byte, 2)}
	b := &fakeProcess{in: []byte{0x78, 0x56}, out: make([]byte, 2)}
	img := genericImage{slaves: map[int]*fakeProcess{1: a, 2: b}}
	p := SlaveImage[int](img, 2)
	if v, err := p.InputValue(0, 16); err != nil || v != 0x5678 {
		t.Errorf("InputValue = %#x, %v; want 0x5678 of slave 2", v, err)
	}
	if err := p.SetOutputValue(4, 8, 0xAB); err != nil || b.out[0] != 0xB0 || b.out[1] != 0x0A || a.out[0] != 0 {
		t.Errorf("SetOutputValue wrote a %x, b %x (err %v)", a.out, b.out, err)
	}
}

func TestEventAndResetStrings(t *testing.T) {
	t.Parallel()
	for k, w := range map[EventKind]string{EventStateChanged: "state_changed", EventFault: "fault",
		EventFaultCleared: "fault_cleared", EventOperationEnabled: "operation_enabled", EventInvalid: "invalid"} {
		if k.String() != w {
			t.Errorf("EventKind(%d) = %q, want %q", k, k.String(), w)
		}
	}
	if ResetAuto.String() != "auto" || ResetManual.String() != "manual" {
		t.Error("FaultReset strings")
	}
}

func TestDriveCycleDoesNotAllocate(t *testing.T) {
	d, fd := newRig(t, Config{Mode: ModeCSV, Profile: Sine(0, 100, time.Second)})
	var now int64
	run(d, fd, &now, time.Millisecond, 10)
	if n := testing.AllocsPerRun(1000, func() {
		d.Cycle(now)
		now += int64(time.Millisecond)
	}); n != 0 {
		t.Errorf("Cycle allocates %v times per call", n)
	}
	// Through the generic adapter too, in fault with events.
	img := genericImage{slaves: map[int]*fakeProcess{3: fd.p}}
	d2, err := Bind(SlaveImage[int](img, 3), fd.l.entries(), Config{Mode: ModeCSV, Profile: Constant(0), FaultReset: ResetAuto, RetryCycles: 1, PulseCycles: 1})
	if err != nil {
		t.Fatal(err)
	}
	fd.sticky = true
	fd.fault(1)
	fd.publish()
	if n := testing.AllocsPerRun(1000, func() {
		d2.Cycle(now)
		d2.ResetFault()
		fd.exchange(time.Millisecond)
	}); n != 0 {
		t.Errorf("Cycle in fault allocates %v times per call", n)
	}
}

func BenchmarkDriveCycle(b *testing.B) {
	b.ReportAllocs()
	d, fd := newRig(b, Config{Mode: ModeCSV, Profile: Sine(0, 100, time.Second)})
	var now int64
	run(d, fd, &now, time.Millisecond, 10)
	for b.Loop() {
		d.Cycle(now)
		now += int64(time.Millisecond)
	}
}

// TestDriveConcurrentAccess runs the cycle while another goroutine asks for
// resets and reads the state (go test -race checks the access).
func TestDriveConcurrentAccess(t *testing.T) {
	t.Parallel()
	d, fd := newRig(t, Config{Mode: ModeCSV, Profile: Constant(0)})
	fd.sticky = true
	fd.fault(0x1234)
	fd.publish()
	var now int64
	run(d, fd, &now, time.Millisecond, 100) // the drive is in fault now
	done, stop, asked := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			d.ResetFault()
			if i == 0 {
				close(asked) // at least one request is in before the cycles go on
			}
			_ = d.State()
			_, _, _ = d.Actual()
			_ = d.Target()
			_ = d.ErrorCode()
			runtime.Gosched()
		}
	}()
	<-asked
	run(d, fd, &now, time.Millisecond, 1900)
	close(stop)
	<-done
	if d.State() != state.Fault || fd.resets == 0 {
		t.Errorf("state %v, %d resets; want fault with reset attempts", d.State(), fd.resets)
	}
}

package sim

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// Process image of the AKD's default mapping (0x1600 and 0x1A00), as the
// rig maps it: outputs at logical 0x0000, inputs at 0x0100.
const (
	// 0x1600: controlword, mode, pad, target position, velocity, torque;
	// 0x1601–0x1603: controlword and mode, target position, velocity.
	akdOutLen = 14 + 3 + 6 + 6
	// 0x1A00: statusword, mode display, pad, position, velocity, torque,
	// error code; 0x1A01–0x1A03: statusword and mode display, position,
	// velocity.
	akdInLen  = 16 + 3 + 6 + 6
	rigInAddr = 0x100
)

// driveRig is a master's view of one drive: it brings the device to OP and
// exchanges its process data in frames, on a segment clock it advances.
type driveRig struct {
	t   testing.TB
	seg *Segment
	dev *Device
	now int64
	out []byte
	in  []byte
}

// newDriveRig brings the device spec (an AKD) to OP with the SyncManager
// lengths out and in (the process data of its default PDO assignment).
func newDriveRig(t testing.TB, spec string, out, in int) *driveRig {
	t.Helper()
	return newDriveRigWith(t, spec, out, in, nil)
}

// newDriveRigWith is newDriveRig with preop, if not nil, run in PREOP (to
// change the PDO assignment, for instance).
func newDriveRigWith(t testing.TB, spec string, out, in int, preop func(seg *Segment)) *driveRig {
	t.Helper()
	seg := newSeg(t, []string{spec}, WithStateChangeDelay(1), WithMailboxDelay(1))
	r := &driveRig{t: t, seg: seg, dev: seg.Devices()[0], out: make([]byte, out), in: make([]byte, in)}
	seg.now = func() int64 { return r.now }
	address(t, seg)
	configSM(t, seg, 0x1001, 0, 0x1800, 0x400, 0x26)
	configSM(t, seg, 0x1001, 1, 0x1C00, 0x400, 0x22)
	if st, code := request(t, seg, 0x1001, 0x02); st != 0x02 {
		t.Fatalf("PREOP: %#04x %v", st, code)
	}
	if preop != nil {
		preop(seg)
	}
	configSM(t, seg, 0x1001, 2, 0x1100, uint16(out), 0x24)
	configSM(t, seg, 0x1001, 3, 0x1140, uint16(in), 0x20)
	configFMMU(t, seg, 0x1001, 0, esc.ForBits(0, out*8, 0x1100, 0, esc.FMMUWrite))
	configFMMU(t, seg, 0x1001, 1, esc.ForBits(rigInAddr*8, in*8, 0x1140, 0, esc.FMMURead))
	r.toState(0x04)
	r.toState(0x08)
	return r
}

// toState requests an AL state and checks the device gets there.
func (r *driveRig) toState(st uint16) {
	r.t.Helper()
	if got, code := request(r.t, r.seg, 0x1001, st); got != st {
		r.t.Fatalf("AL state %#x: got %#04x %v", st, got, code)
	}
}

// cycle advances the clock by dt and exchanges the process data once.
func (r *driveRig) cycle(dt time.Duration) {
	r.t.Helper()
	r.now += int64(dt)
	f := frameOf(r.t, logical(wire.LWR, 0, r.out), logical(wire.LRD, rigInAddr, make([]byte, len(r.in))))
	if !r.seg.Process(f) {
		r.t.Fatal("cyclic frame not processed")
	}
	d := datagrams(f)
	if d[0].WKC != 1 || d[1].WKC != 1 {
		r.t.Fatalf("cyclic WKC %d/%d, want 1/1", d[0].WKC, d[1].WKC)
	}
	copy(r.in, d[1].Data)
}

// settle sends one more frame at the same time: the drive takes the
// outputs of a frame when the next one passes (one cycle of latency, as on
// a real drive), so the inputs of this one show the reaction.
func (r *driveRig) settle() {
	r.t.Helper()
	r.cycle(0)
}

// run cycles every ms for dur.
func (r *driveRig) run(dur time.Duration) {
	r.t.Helper()
	for range dur / time.Millisecond {
		r.cycle(time.Millisecond)
	}
}

func (r *driveRig) setControl(cw uint16) { binary.LittleEndian.PutUint16(r.out[0:], cw) }
func (r *driveRig) setMode(m int8)       { r.out[2] = byte(m) }
func (r *driveRig) setTargetPosition(p int32) {
	binary.LittleEndian.PutUint32(r.out[4:], uint32(p))
}
func (r *driveRig) setTargetVelocity(v int32) {
	binary.LittleEndian.PutUint32(r.out[8:], uint32(v))
}
func (r *driveRig) setTargetTorque(tq int16) {
	binary.LittleEndian.PutUint16(r.out[12:], uint16(tq))
}
func (r *driveRig) statusword() uint16   { return binary.LittleEndian.Uint16(r.in[0:]) }
func (r *driveRig) modeDisplay() int8    { return int8(r.in[2]) }
func (r *driveRig) position() int32      { return int32(binary.LittleEndian.Uint32(r.in[4:])) }
func (r *driveRig) velocity() int32      { return int32(binary.LittleEndian.Uint32(r.in[8:])) }
func (r *driveRig) torque() int16        { return int16(binary.LittleEndian.Uint16(r.in[12:])) }
func (r *driveRig) errorCode() uint16    { return binary.LittleEndian.Uint16(r.in[14:]) }
func (r *driveRig) state() state.State   { return r.dev.DriveState() }
func rpm(v float64) int32                { return int32(math.Round(v / 60 * countsPerRev)) }
func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// enable walks the drive to operation enabled in mode m: shutdown,
// switch on, enable operation, one cycle each.
func (r *driveRig) enable(m int8) {
	r.t.Helper()
	r.setMode(m)
	for _, cw := range []uint16{0x06, 0x07, 0x0F} {
		r.setControl(cw)
		r.cycle(time.Millisecond)
	}
	r.settle()
	if s := r.state(); s != state.OperationEnabled {
		r.t.Fatalf("after 0x06, 0x07, 0x0F: %v (statusword %#04x)", s, r.statusword())
	}
}

// TestDriveStatuswordEncodesEachState checks that the drive's statusword
// decodes, with the master's decoder, to the state it is in, and reports
// voltage enabled past not ready to switch on.
func TestDriveStatuswordEncodesEachState(t *testing.T) {
	for s := state.NotReadyToSwitchOn; s <= state.Fault; s++ {
		sw := stateBits(s)
		if got := sw.State(); got != s {
			t.Errorf("%v: statusword %#04x reads as %v", s, uint16(sw), got)
		}
		if voltage := sw&state.SWVoltageEnabled != 0; voltage != (s != state.NotReadyToSwitchOn) {
			t.Errorf("%v: statusword %#04x, voltage enabled %v", s, uint16(sw), voltage)
		}
	}
}

func TestDriveStateMachineTable(t *testing.T) {
	const (
		shutdown   = state.CmdShutdown
		switchOn   = state.CmdSwitchOn
		enableOp   = state.CmdEnableOperation
		disableOp  = state.CmdDisableOperation
		disableV   = state.CmdDisableVoltage
		quickStop  = state.CmdQuickStop
		faultReset = state.CmdFaultReset
	)
	tests := []struct {
		from     state.State
		cw       state.Controlword
		edge     bool
		canReset bool
		want     state.State
	}{
		{state.SwitchOnDisabled, shutdown, false, true, state.ReadyToSwitchOn},  // 2
		{state.SwitchOnDisabled, switchOn, false, true, state.SwitchOnDisabled}, // no transition
		{state.SwitchOnDisabled, enableOp, false, true, state.SwitchOnDisabled}, // no transition
		{state.ReadyToSwitchOn, switchOn, false, true, state.SwitchedOn},        // 3
		{state.ReadyToSwitchOn, enableOp, false, true, state.OperationEnabled},  // 3+4
		{state.ReadyToSwitchOn, disableV, false, true, state.SwitchOnDisabled},  // 7
		{state.ReadyToSwitchOn, quickStop, false, true, state.SwitchOnDisabled}, // 7
		{state.SwitchedOn, enableOp, false, true, state.OperationEnabled},       // 4
		{state.SwitchedOn, shutdown, false, true, state.ReadyToSwitchOn},        // 6
		{state.SwitchedOn, disableV, false, true, state.SwitchOnDisabled},       // 10
		{state.SwitchedOn, quickStop, false, true, state.SwitchOnDisabled},      // 10
		{state.OperationEnabled, disableOp, false, true, state.SwitchedOn},      // 5
		{state.OperationEnabled, shutdown, false, true, state.ReadyToSwitchOn},  // 8
		{state.OperationEnabled, disableV, false, true, state.SwitchOnDisabled}, // 9
		{state.OperationEnabled, quickStop, false, true, state.QuickStopActive}, // 11
		{state.OperationEnabled, enableOp, false, true, state.OperationEnabled}, // stays
		{state.QuickStopActive, disableV, false, true, state.SwitchOnDisabled},  // 12
		{state.QuickStopActive, enableOp, false, true, state.QuickStopActive},   // option code 2: no 16
		{state.Fault, faultReset, true, true, state.SwitchOnDisabled},           // 15
		{state.Fault, faultReset, false, true, state.Fault},                     // level, not edge
		{state.Fault, faultReset, true, false, state.Fault},                     // cause persists
		{state.Fault, enableOp, false, true, state.Fault},                       // nothing else leaves fault
		{state.FaultReactionActive, faultReset, true, true, state.FaultReactionActive},
		{state.NotReadyToSwitchOn, shutdown, false, true, state.NotReadyToSwitchOn},
		{state.OperationEnabled, faultReset | enableOp, false, true, state.OperationEnabled},
	}
	for _, tt := range tests {
		if got := nextDriveState(tt.from, tt.cw, tt.edge, tt.canReset); got != tt.want {
			t.Errorf("%v + %#04x (edge %v, cause gone %v) = %v, want %v", tt.from, tt.cw, tt.edge, tt.canReset, got, tt.want)
		}
	}
}

func TestDriveEnablesThroughFrames(t *testing.T) {
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.cycle(time.Millisecond)
	if sw := r.statusword(); sw != 0x0250 {
		t.Errorf("statusword after reaching OP %#04x, want 0x0250 (switch on disabled, voltage, remote)", sw)
	}
	if m := r.modeDisplay(); m != ModeCSP {
		t.Errorf("mode display %d, want CSP (8) by default", m)
	}
	r.setMode(ModeCSV)
	steps := []struct {
		cw   uint16
		want state.State
		sw   uint16
	}{
		{0x06, state.ReadyToSwitchOn, 0x0231},
		{0x07, state.SwitchedOn, 0x0233},
		{0x0F, state.OperationEnabled, 0x1637}, // follows the command, target reached (at rest)
		{0x07, state.SwitchedOn, 0x0233},
		{0x0F, state.OperationEnabled, 0x1637},
	}
	for _, s := range steps {
		r.setControl(s.cw)
		r.cycle(time.Millisecond)
		r.settle()
		if got := r.state(); got != s.want || r.statusword() != s.sw {
			t.Errorf("controlword %#04x: %v, statusword %#04x; want %v, %#04x", s.cw, got, r.statusword(), s.want, s.sw)
		}
	}
	// Quick stop while turning: the drive ramps down on 0x6085, then
	// switches on disabled (quick stop option code 2).
	for v := int32(1); v <= 10; v++ {
		r.setTargetVelocity(rpm(60 * float64(v)))
		r.cycle(time.Millisecond)
	}
	r.setControl(0x02)
	r.cycle(time.Millisecond)
	r.settle()
	if got, sw := r.state(), r.statusword(); got != state.QuickStopActive || sw&0x6F != 0x07 || r.velocity() <= 0 {
		t.Errorf("quick stop at speed: %v, statusword %#04x, velocity %d", got, sw, r.velocity())
	}
	r.run(100 * time.Millisecond)
	if got := r.state(); got != state.SwitchOnDisabled || abs32(r.velocity()) > int64(rpm(1)) {
		t.Errorf("after the quick stop: %v, velocity %d", got, r.velocity())
	}
	if m := r.modeDisplay(); m != ModeCSV {
		t.Errorf("mode display %d, want 9", m)
	}
	// Unsupported modes leave the display as it was.
	r.setMode(1)
	r.cycle(time.Millisecond)
	if m := r.modeDisplay(); m != ModeCSV {
		t.Errorf("mode display after 0x6060 = 1: %d, want 9", m)
	}
}

func TestDriveIgnoresOutputsBelowOP(t *testing.T) {
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.toState(0x04)
	r.setControl(0x0F)
	for _, cw := range []uint16{0x06, 0x07, 0x0F} {
		r.setControl(cw)
		r.cycle(time.Millisecond)
	}
	if s := r.state(); s != state.SwitchOnDisabled {
		t.Errorf("controlwords in SAFEOP: %v, want switch on disabled", s)
	}
	if state.Statusword(r.statusword())&state.SWRemote != 0 {
		t.Errorf("statusword %#04x: remote set in SAFEOP", r.statusword())
	}
}

func TestDriveCSVFollowsTarget(t *testing.T) {
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCSV)
	// Ramp to 1500 rpm in 20 ms (1.25 rev/s per cycle, within 0x60C5).
	target := rpm(1500)
	for i := int32(1); i <= 20; i++ {
		r.setTargetVelocity(target / 20 * i)
		r.cycle(time.Millisecond)
	}
	r.setTargetVelocity(target)
	r.run(30 * time.Millisecond)
	if v := float64(r.velocity()); !within(v, float64(target), 0.01*float64(target)) {
		t.Errorf("velocity %v counts/s 30 ms after the ramp, want %v ± 1 %%", v, target)
	}
	if state.Statusword(r.statusword())&state.SWTargetReached == 0 {
		t.Errorf("statusword %#04x without target reached", r.statusword())
	}
	if r.torque() <= 0 {
		t.Errorf("torque %d ‰ at constant speed, want > 0 (friction)", r.torque())
	}
	p1 := r.position()
	r.run(10 * time.Millisecond)
	if d, want := float64(r.position()-p1), float64(target)/100; !within(d, want, 0.02*want) {
		t.Errorf("position moved %v counts in 10 ms, want %v", d, want)
	}
	if st, ok := r.dev.Drive(); !ok || st.Velocity != r.velocity() || st.Position != r.position() {
		t.Errorf("Drive() = %+v, %v; inputs say velocity %d position %d", st, ok, r.velocity(), r.position())
	}
}

func TestDriveCSTTorqueAccelerates(t *testing.T) {
	for _, tq := range []int16{300, -300} {
		r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
		r.enable(ModeCST)
		r.setTargetTorque(tq)
		r.run(5 * time.Millisecond)
		v1 := r.velocity()
		r.run(5 * time.Millisecond)
		v2 := r.velocity()
		if r.torque() != tq {
			t.Errorf("torque %d: actual %d ‰", tq, r.torque())
		}
		sign := int32(1)
		if tq < 0 {
			sign = -1
		}
		if v1*sign <= 0 || (v2-v1)*sign <= 0 {
			t.Errorf("torque %d ‰: velocity %d then %d, want it growing in the torque's direction", tq, v1, v2)
		}
		// Expected: a = T/J, 0.3 N·m / 2e-4 kg·m² = 1500 rad/s², for
		// 9 ms: the drive takes the torque one cycle after the master
		// sent it.
		want := 1500.0 * 0.009 * countsPerRad * float64(sign)
		if !within(float64(v2), want, 0.05*math.Abs(want)) {
			t.Errorf("torque %d ‰: velocity after 10 ms %d, want about %.0f", tq, v2, want)
		}
	}
}

func TestDriveCSPTracksPosition(t *testing.T) {
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCSP)
	// Move 2 revolutions at 2 rev/s with a 50 ms acceleration ramp.
	var pos, v float64
	vmax := 2.0 * countsPerRev
	acc := vmax / 0.05
	worst := int32(0)
	for pos < 2*countsPerRev {
		v = math.Min(vmax, v+acc*0.001)
		pos = math.Min(2*countsPerRev, pos+v*0.001)
		r.setTargetPosition(int32(pos))
		r.cycle(time.Millisecond)
		st, _ := r.dev.Drive()
		worst = max(worst, st.FollowingError, -st.FollowingError)
		if r.state() != state.OperationEnabled {
			t.Fatalf("faulted while tracking: %v, error %#04x", r.state(), r.errorCode())
		}
	}
	if worst > defaultFollowingWindow/8 {
		t.Errorf("following error up to %d counts while moving, want below %d", worst, defaultFollowingWindow/8)
	}
	r.run(50 * time.Millisecond)
	if d := r.position() - 2*countsPerRev; d < -64 || d > 64 {
		t.Errorf("position %d at rest, target %d", r.position(), 2*countsPerRev)
	}
	if state.Statusword(r.statusword())&state.SWTargetReached == 0 {
		t.Errorf("statusword %#04x at rest without target reached", r.statusword())
	}
}

func TestDriveProcessDoesNotAllocate(t *testing.T) {
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCSV)
	r.setTargetVelocity(rpm(100))
	f := frameOf(t, logical(wire.LWR, 0, r.out), logical(wire.LRD, rigInAddr, make([]byte, akdInLen)))
	allocs := testing.AllocsPerRun(200, func() {
		r.now += int64(time.Millisecond)
		r.seg.Process(f)
	})
	if allocs != 0 {
		t.Errorf("Process with a drive allocates %v times per frame", allocs)
	}
	if r.state() != state.OperationEnabled || r.dev.DriveState() != state.OperationEnabled {
		t.Errorf("drive left operation enabled: %v", r.state())
	}
}

func BenchmarkDriveProcess(b *testing.B) {
	r := newDriveRig(b, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCSP)
	f := frameOf(b, logical(wire.LWR, 0, r.out), logical(wire.LRD, rigInAddr, make([]byte, akdInLen)))
	b.ReportAllocs()
	for b.Loop() {
		r.now += int64(time.Millisecond)
		r.seg.Process(f)
	}
}

// While SYNC0 runs the drive's loops follow its pulses, not the frames: a
// master sending frames every 0.5 ms to a drive on a 2 ms SYNC0 sees the
// motor move once per pulse, by a whole SYNC0 cycle.
func TestDriveRunsOnSync0(t *testing.T) {
	const ms = 1_000_000
	r := newDriveRig(t, "AKD", akdOutLen, akdInLen)
	r.enable(ModeCST)
	r.setTargetTorque(300)
	r.settle()
	sys := binary.LittleEndian.Uint64(one(t, r.seg, phys(wire.FPRD, 0x1001, 0x0910, make([]byte, 8))).Data)
	syncSetup(t, r.seg, 0x1001, sys+ms, 2*ms, 0, 0x03)
	// 0.3 N·m on 2e-4 kg·m² for one 2 ms cycle, in counts/s.
	perPulse := 1500.0 * 0.002 * countsPerRad
	// Before the first pulse, and at it, the frames set the time base.
	for r.dev.Sync0Pulses() == 0 {
		r.cycle(500 * time.Microsecond)
	}
	first := r.dev.Sync0Pulses()
	changes := 0
	prev := r.velocity()
	for range 40 {
		r.cycle(500 * time.Microsecond)
		v := r.velocity()
		if v == prev {
			continue
		}
		changes++
		if !within(float64(v-prev), perPulse, 0.02*perPulse) {
			t.Errorf("velocity step %d counts/s at a pulse, want %.0f (one SYNC0 cycle)", v-prev, perPulse)
		}
		prev = v
	}
	if p := r.dev.Sync0Pulses() - first; changes != int(p) || p < 9 {
		t.Errorf("velocity changed %d times in 40 frames (20 ms), over %d SYNC0 pulses", changes, p)
	}
}

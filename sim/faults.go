package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// Faults injects the faults of a production line into a segment: lost
// frames, late answers, corrupted answers, devices that lose power and come
// back, application errors and clock jumps. Every segment has one (see
// Segment.Faults); all of it is off until armed.
//
// Its methods are safe to call from any goroutine while Serve runs: they
// take the segment's lock, so a fault armed between two frames applies
// from the next frame on. The per-frame work Process does for armed faults
// allocates nothing.
//
// Counts tells exactly how many faults were applied, so that a test can
// compare the counters of the master under test with what was injected.
type Faults struct {
	seg *Segment // guards everything below with seg.mu

	seed uint64
	rng  *rand.Rand

	dropPercent float64 // 0..100
	dropEvery   uint64  // 0: off
	dropSeen    uint64  // frames seen since DropEvery
	dropNext    int

	delayMin, delayMax time.Duration // 0, 0: off
	delayEvery         uint64
	delaySeen          uint64

	corruptWKC, corruptLength int

	noise []noisyPort // noisy cables (Noisy)

	counts FaultCounts
}

// FaultCounts is how many faults a segment's Faults applied. Every counter
// only grows.
type FaultCounts struct {
	// Dropped is the number of frames lost to DropPercent, DropEvery and
	// DropNext (each lost frame counts once). They also count in
	// Stats.Dropped, which counts all unanswered frames.
	Dropped uint64
	// Delayed is the number of answers Serve held back.
	Delayed uint64
	// CorruptedWKC and CorruptedLength are the number of answers sent
	// with a wrong working counter and with a bad datagram length.
	CorruptedWKC, CorruptedLength uint64
	// Disappeared and Returned count power losses and power-ups of devices.
	Disappeared, Returned uint64
	// ALErrors counts application errors raised with ALError.
	ALErrors uint64
	// DriftJumps and OffsetJumps count clock faults.
	DriftJumps, OffsetJumps uint64
	// CRCErrors is the number of frames lost to a noisy cable (Noisy):
	// they also count in Stats.Dropped. String leaves it out, to keep the
	// line's format; the devices' error counters show it per port.
	CRCErrors uint64
	// PowerCycles counts PowerCycle (left out of String, as CRCErrors).
	PowerCycles uint64
}

// String returns the counts as one line of key=value pairs, e.g.
// "dropped=3 delayed=0 corrupted_wkc=1 …", in a fixed order.
func (c FaultCounts) String() string {
	var b strings.Builder
	for i, kv := range []struct {
		k string
		v uint64
	}{
		{"dropped", c.Dropped}, {"delayed", c.Delayed},
		{"corrupted_wkc", c.CorruptedWKC}, {"corrupted_length", c.CorruptedLength},
		{"disappeared", c.Disappeared}, {"returned", c.Returned},
		{"al_errors", c.ALErrors}, {"drift_jumps", c.DriftJumps}, {"offset_jumps", c.OffsetJumps},
	} {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv.k)
		b.WriteByte('=')
		b.WriteString(strconv.FormatUint(kv.v, 10))
	}
	return b.String()
}

// Errors of the device faults.
var (
	// ErrNoSuchDevice is matched by the error of a device fault whose ring
	// position is not in the segment.
	ErrNoSuchDevice = errors.New("no device at that position")
	// ErrDeviceOff is matched by the error of a fault on a device that has
	// no power (Disappear), and of Disappear on one that has none already.
	ErrDeviceOff = errors.New("device has no power")
	// ErrDeviceOn is matched by the error of Return on a device that has
	// power.
	ErrDeviceOn = errors.New("device has power")
	// ErrNoApplication is matched by the error of ALError on a device
	// without an application controller (device emulation: its AL status
	// follows AL control and cannot signal an error of its own).
	ErrNoApplication = errors.New("device has no application controller")
	// ErrNoDC is matched by the error of a clock fault on a device without
	// a distributed clock.
	ErrNoDC = errors.New("device has no distributed clock")
)

// defaultFaultSeed seeds DropPercent and DelayRandom until SetSeed.
const defaultFaultSeed = 1

func (f *Faults) init(s *Segment) {
	f.seg = s
	f.seed = defaultFaultSeed
	f.rng = rand.New(rand.NewPCG(defaultFaultSeed, defaultFaultSeed))
}

// Faults returns the segment's fault injector.
func (s *Segment) Faults() *Faults { return &s.faults }

// SetSeed restarts the random sequence DropPercent and DelayRandom draw
// from: the same seed and the same frames give the same faults.
func (f *Faults) SetSeed(seed uint64) {
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	f.seed = seed
	f.rng = rand.New(rand.NewPCG(seed, seed))
}

// DropPercent loses each frame with probability p percent (clamped to
// 0..100; 0 switches it off), drawn from the seeded sequence (SetSeed).
// A lost frame never reaches the first device: no device sees it and the
// master gets no answer.
func (f *Faults) DropPercent(p float64) {
	if p != p || p < 0 {
		p = 0
	}
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	f.dropPercent = min(p, 100)
}

// DropEvery loses every Nth frame from now on (the Nth, 2Nth, …); n ≤ 0
// switches it off.
func (f *Faults) DropEvery(n int) {
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	f.dropEvery, f.dropSeen = uint64(max(n, 0)), 0
}

// DropNext loses exactly the next n frames that carry process data (a
// logical datagram: the cyclic frames), on top of whatever DropPercent and
// DropEvery lose (n ≤ 0: none). Acyclic frames pass, so a master's own
// recovery traffic does not take the losses meant for its cycle.
func (f *Faults) DropNext(n int) {
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	f.dropNext = max(n, 0)
}

// DropOff stops losing frames: DropPercent, DropEvery and DropNext are off.
func (f *Faults) DropOff() {
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	f.dropPercent, f.dropEvery, f.dropSeen, f.dropNext = 0, 0, 0, 0
}

// Delay makes Serve hold back every Nth answer (every ≤ 1: all) by d
// before sending it, without holding up the segment; d ≤ 0 switches delays
// off. Process alone, without Serve, sends nothing and delays nothing.
func (f *Faults) Delay(d time.Duration, every int) { f.DelayRandom(d, d, every) }

// DelayRandom is Delay with a delay drawn uniformly from [lo, hi] for each
// delayed answer, from the seeded sequence (SetSeed). hi below lo counts
// as lo; lo ≤ 0 and hi ≤ 0 switch delays off.
func (f *Faults) DelayRandom(lo, hi time.Duration, every int) {
	lo, hi = max(lo, 0), max(hi, lo, 0)
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	f.delayMin, f.delayMax = lo, hi
	f.delayEvery, f.delaySeen = uint64(max(every, 1)), 0
}

// DelayOff stops delaying answers.
func (f *Faults) DelayOff() { f.DelayRandom(0, 0, 1) }

// CorruptWKC makes the next n answers that carry process data (a logical
// datagram: the cyclic frames) carry a working counter one higher than the
// devices left it, in their first logical datagram. To a master it looks
// like one device too many answered.
func (f *Faults) CorruptWKC(n int) {
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	f.corruptWKC = max(n, 0)
}

// CorruptLength makes the next n answers that carry process data malformed: the length field of
// their first datagram claims one byte more than the rest of the frame
// holds, so a decoder finds the datagram overrunning the frame
// (wire.ErrDatagramOverrun) and must discard the answer.
func (f *Faults) CorruptLength(n int) {
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	f.corruptLength = max(n, 0)
}

// Disappear cuts the power of the device at ring position pos (0 is the
// one next to the master), as when a terminal is pulled: the device before
// it loses the link on its downstream port, which closes (auto loop
// control), so frames turn back there and neither pos nor the devices
// behind it see them or add to working counters. With pos 0 the master's
// port loses its link and no frame comes back at all. The device keeps no
// state; Return powers it up again.
func (f *Faults) Disappear(pos int) error {
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.deviceAt(pos, "disappear")
	if err != nil {
		return err
	}
	if d.off {
		return fmt.Errorf("sim: disappear %d: %w", pos, ErrDeviceOff)
	}
	d.off = true
	s.relink()
	f.counts.Disappeared++
	return nil
}

// Return powers the device at pos up again after Disappear: every register
// back to its power-up value (station address 0, AL status INIT without
// error, SyncManagers and FMMUs cleared, mailbox empty, EEPROM interface
// idle, the distributed clock starting a new local time base with the same
// oscillator drift), the EEPROM content kept; the ports open again and the
// neighbour's DL status shows the link.
func (f *Faults) Return(pos int) error {
	return f.powerUp(pos, nil)
}

// powerUp switches the device at pos on again: as itself, or as the
// device other when it is not nil.
func (f *Faults) powerUp(pos int, other *Device) error {
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.deviceAt(pos, "return")
	if err != nil {
		return err
	}
	if !d.off {
		return fmt.Errorf("sim: return %d: %w", pos, ErrDeviceOn)
	}
	image, spec := d.eeprom.image, d.spec
	if other != nil {
		image, spec = other.eeprom.image, other.spec
	}
	if err := d.powerUp(image, spec); err != nil {
		return fmt.Errorf("sim: return %d as %s: %w", pos, spec.name, err)
	}
	s.adopt(d)
	d.off = false
	s.relink()
	f.counts.Returned++
	return nil
}

// ReturnAs powers the device at pos up as another device, spec (a model
// name or SII image path, as NewDevice takes): a technician replaced the
// terminal with a different one. The master must refuse to configure it.
// It counts as a return. The position keeps the new device: a later
// Return powers it up again; ReturnAs with the original model puts that
// back.
func (f *Faults) ReturnAs(pos int, spec string) error {
	other, err := NewDevice(spec)
	if err != nil {
		return fmt.Errorf("sim: return %d as %s: %w", pos, spec, err)
	}
	return f.powerUp(pos, other)
}

// ALError makes the application controller of the device at pos report an
// error, as on a SyncManager watchdog expiry (code 0x001B): a device in OP
// drops to SAFEOP, one in a lower state stays there; AL status gets the
// error indication and AL status code code. A pending state request is
// dropped. The device then refuses to go up until the master acknowledges
// (AL control with bit 4), as the state machine rules say; acknowledge and
// an OP request in the same write work too.
func (f *Faults) ALError(pos int, code uint16) error {
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.deviceAt(pos, "AL error on")
	if err != nil {
		return err
	}
	if d.off {
		return fmt.Errorf("sim: AL error on %d: %w", pos, ErrDeviceOff)
	}
	if d.esm.emulated {
		return fmt.Errorf("sim: AL error on %d (%s): %w", pos, d.name, ErrNoApplication)
	}
	d.esm.raise(esc.ALStatusCode(code))
	d.stateChanged()
	f.counts.ALErrors++
	return nil
}

// HoldALError raises an application error on the device at pos as ALError
// does, and keeps it: until ReleaseALError, every request for OP is refused
// with the same code, so the device stays in SAFEOP+ERR however often the
// master acknowledges (a device whose application stays faulty until it is
// repaired).
func (f *Faults) HoldALError(pos int, code uint16) error {
	if code == 0 {
		return fmt.Errorf("sim: hold AL error on %d: code 0 is no error", pos)
	}
	if err := f.ALError(pos, code); err != nil {
		return err
	}
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	s.devices[pos].esm.holdErr = esc.ALStatusCode(code)
	return nil
}

// ReleaseALError ends HoldALError on the device at pos: its next request
// for OP, after an acknowledge, succeeds.
func (f *Faults) ReleaseALError(pos int) error {
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := s.deviceAt(pos, "release AL error on")
	if err != nil {
		return err
	}
	d.esm.holdErr = esc.ALNoError
	return nil
}

// DriftJump sets the drift of the local clock of the device at pos to ppm
// (clamped to ±faultcmd.MaxDriftPPM) from now on, as an oscillator that
// jumps: the local time stays continuous, its rate changes, and the ESC's
// drift control loop sees a growing system time difference (0x092C) until
// it catches up.
func (f *Faults) DriftJump(pos int, ppm float64) error {
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := f.clockDevice(pos, "drift jump")
	if err != nil {
		return err
	}
	d.clock.setDrift(ppbOf(ppm), s.now())
	f.counts.DriftJumps++
	return nil
}

// OffsetJump steps the local (and so the system) time of the device at pos
// by ns, forward for positive ns.
func (f *Faults) OffsetJump(pos int, ns int64) error {
	s := f.seg
	s.mu.Lock()
	defer s.mu.Unlock()
	d, err := f.clockDevice(pos, "offset jump")
	if err != nil {
		return err
	}
	d.clock.offset += ns
	f.counts.OffsetJumps++
	return nil
}

// clockDevice returns the powered device with a distributed clock at pos.
func (f *Faults) clockDevice(pos int, what string) (*Device, error) {
	d, err := f.seg.deviceAt(pos, what)
	if err != nil {
		return nil, err
	}
	switch {
	case d.off:
		return nil, fmt.Errorf("sim: %s on %d: %w", what, pos, ErrDeviceOff)
	case !d.hasDC:
		return nil, fmt.Errorf("sim: %s on %d (%s): %w", what, pos, d.name, ErrNoDC)
	}
	return d, nil
}

// Counts returns how many faults were applied so far.
func (f *Faults) Counts() FaultCounts {
	f.seg.mu.Lock()
	defer f.seg.mu.Unlock()
	return f.counts
}

// deviceAt returns the device at ring position pos for the fault what.
// The caller holds s.mu.
func (s *Segment) deviceAt(pos int, what string) (*Device, error) {
	if pos < 0 || pos >= len(s.devices) {
		return nil, fmt.Errorf("sim: %s %d: %w (the segment has %d devices)", what, pos, ErrNoSuchDevice, len(s.devices))
	}
	return s.devices[pos], nil
}

// drop decides whether the frame now being processed is lost. Every mode
// sees every frame, so each one's sequence does not depend on the others.
// The caller holds the segment's lock.
func (f *Faults) drop(processData bool) bool {
	lost := false
	if f.dropNext > 0 && processData {
		f.dropNext--
		lost = true
	}
	if f.dropEvery > 0 {
		f.dropSeen++
		if f.dropSeen%f.dropEvery == 0 {
			lost = true
		}
	}
	if f.dropPercent > 0 && f.rng.Float64()*100 < f.dropPercent {
		lost = true
	}
	if lost {
		f.counts.Dropped++
	}
	return lost
}

// hold returns how long Serve holds back the answer now being sent. The
// caller holds the segment's lock.
func (f *Faults) hold() time.Duration {
	if f.delayMax <= 0 {
		return 0
	}
	f.delaySeen++
	if f.delaySeen%f.delayEvery != 0 {
		return 0
	}
	d := f.delayMin
	if span := f.delayMax - f.delayMin; span > 0 {
		d += time.Duration(f.rng.Int64N(int64(span) + 1))
	}
	f.counts.Delayed++
	return d
}

// corrupt damages an answer when a corruption is armed. The caller holds
// the segment's lock; f is a well-formed frame.
func (f *Faults) corrupt(fr *wire.Frame) {
	if f.corruptWKC > 0 {
		var dg, target wire.Datagram
		found := false
		it := fr.Datagrams()
		for it.Next(&dg) {
			if !found || (dg.Command.Addressing() == wire.AddressingLogical &&
				target.Command.Addressing() != wire.AddressingLogical) {
				target, found = dg, true
			}
		}
		if found {
			target.SetWKC(target.WKC + 1)
			f.corruptWKC--
			f.counts.CorruptedWKC++
		}
	}
	if f.corruptLength > 0 {
		payload := fr.Payload()
		if len(payload) >= wire.DatagramHeaderLen {
			lf := binary.LittleEndian.Uint16(payload[6:])
			// One byte more than the frame holds after the header and
			// the working counter.
			n := len(payload) - wire.DatagramOverhead + 1
			binary.LittleEndian.PutUint16(payload[6:], lf&^datagramLenMask|uint16(n)&datagramLenMask)
			f.corruptLength--
			f.counts.CorruptedLength++
		}
	}
}

// datagramLenMask selects the length in a datagram's length field.
const datagramLenMask = 0x07FF

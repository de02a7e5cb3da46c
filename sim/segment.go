package sim

import (
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// Segment is a line of simulated devices behind one master port: device 0
// faces the master on its port 0, each device's downstream port leads to the
// next, and the last one closes the loop. Process carries a frame through
// all of them and back, as the wire would.
type Segment struct {
	mu      sync.Mutex
	devices []*Device
	opts    options
	start   time.Time
	now     func() int64 // segment time in ns; tests may replace it
	frame   uint64       // frames processed
	// lastFrame is the segment time of the last frame processed.
	lastFrame int64
	hops      hops // propagation model
	stats     Stats
	states    []esc.ALStatus // last states reported to the logger
	codes     []esc.ALStatusCode
	faults    Faults
	// datagrams holds the current frame's datagrams, decoded once and
	// handed to every device in turn (their setters write through to the
	// frame); its capacity grows to the most a frame has carried.
	datagrams []wire.Datagram
}

// Stats counts a segment's frames.
type Stats struct {
	Frames   uint64 // frames offered to Process
	Answered uint64 // frames processed and sent back
	Dropped  uint64 // frames not answered: not EtherCAT, malformed, or lost on an open port
	SendErrs uint64 // answers Serve failed to send
	// LinkErrs counts receive and send errors Serve rode through because
	// the interface was down or gone for a while (ENETDOWN, ENXIO, …).
	LinkErrs uint64
}

// Option configures a Segment.
type Option func(*options)

type options struct {
	siiBusyFrames int
	esmDelay      int // <0: each model's own
	mailboxDelay  int // <0: each model's own
	pattern       *Pattern
	logger        *slog.Logger
	recvTimeout   time.Duration
	preset        *preset
	delay         *ResponseDelay
	hopDelay      int       // forward hop, ns
	drift         []float64 // ppm per device, repeating
	clock         func() int64
	waitKeepsP    bool
	seed          *uint64
}

type preset struct {
	first uint16
	state esc.ALState
}

// WithPreset makes Run start the segment as a master that configured it
// earlier would have left it (see Segment.Preset): for replaying captures
// that begin in the middle of a session.
func WithPreset(firstStation uint16, state esc.ALState) Option {
	return func(o *options) { o.preset = &preset{firstStation, state} }
}

// WithSIIBusyFrames makes an SII EEPROM command stay busy for n frames
// after the frame that issued it (0: done within it), instead of the time
// the device's controller takes (the default: about 0.69 ms for a read on the
// ET1100 and ET1200, whatever the master's polling rate). Frame counts
// make a master that polls faster or slower see a different device; they
// remain for tests written against them.
func WithSIIBusyFrames(n int) Option { return func(o *options) { o.siiBusyFrames = max(n, 0) } }

// WithStateChangeDelay makes devices with an application controller take
// frames, counted, to carry out a state change request, instead of their
// controller's time (the default: each model's own, 0.3 ms for most
// terminals, 1.48 ms for the EK1914). Devices without one (device
// emulation) follow at once, as the real ones do.
func WithStateChangeDelay(frames int) Option { return func(o *options) { o.esmDelay = max(frames, 0) } }

// WithMailboxDelay makes application controllers answer a mailbox request
// after frames, counted, instead of their time (the default: each model's
// own, 0.7 ms for the Beckhoff terminals).
func WithMailboxDelay(frames int) Option { return func(o *options) { o.mailboxDelay = max(frames, 0) } }

// WithInputPattern sets the input pattern of every device with inputs.
func WithInputPattern(p Pattern) Option { return func(o *options) { o.pattern = &p } }

// WithWaitKeepsP makes Serve wait for frames without handing the Go
// scheduler's P off, on a link that can (link.WaitKeeper), and yield to
// the scheduler itself every few milliseconds while frames come. It is for
// a process that does nothing but serve the segment ('ecagent sim'): there
// the ordinary wait kept the runtime's sysmon thread waking every 20 µs,
// on the simulator's own core.
func WithWaitKeepsP() Option { return func(o *options) { o.waitKeepsP = true } }

// WithLogger makes Serve log each state change of each device at info
// level, and its start and end.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithClockDrift gives the devices' local clocks a drift, in ppm, in
// line order: the first value for the first device, and so on; when there
// are fewer values than devices the list repeats (one value gives every
// device the same drift). Values are clamped to ±faultcmd.MaxDriftPPM.
// Without it the clocks run at exactly the simulator's rate.
func WithClockDrift(ppm ...float64) Option {
	p := append([]float64(nil), ppm...)
	return func(o *options) { o.drift = p }
}

// WithHopDelay sets the time, in ns, a frame takes from one device to the
// next (default 140 ns, what real E-bus terminals show). The difference
// to the default is link delay that the frame also meets on its way back
// (the return hop, 20 ns by default, never goes below zero), so the
// delays masters measure grow by about ns − 140 per device.
func WithHopDelay(ns int) Option { return func(o *options) { o.hopDelay = max(ns, 0) } }

// WithClock makes the segment take its time from now, in ns from any
// origin, instead of the monotonic clock since NewSegment: a replay drives
// it from a capture's timestamps, so that every time-based behaviour
// (EEPROM cycles, mailbox answers, state changes, distributed clocks)
// happens exactly as the capture's timing says, whatever the host's load.
// now must never go backwards and is called with the segment locked.
func WithClock(now func() int64) Option { return func(o *options) { o.clock = now } }

// WithSeed makes every time a device takes (a state change, a mailbox
// answer, an EEPROM read) a draw from the spread the real device of its
// profile showed, from a generator seeded with seed and the device's
// position: the same seed gives the same times, run after run, so that a
// replay is reproducible and several seeds show the spread. Without it
// each time is the typical value.
func WithSeed(seed uint64) Option { return func(o *options) { o.seed = &seed } }

// NewSegment connects devices in a line, in order, and returns the segment.
// The devices become part of it (a device must not be in two segments).
func NewSegment(devices []*Device, opts ...Option) *Segment {
	o := options{siiBusyFrames: siiTimeBased, esmDelay: -1, mailboxDelay: -1, recvTimeout: 100 * time.Millisecond,
		hopDelay: forwardHop}
	for _, opt := range opts {
		opt(&o)
	}
	s := &Segment{devices: append([]*Device(nil), devices...), opts: o, start: time.Now(), hops: hopsFor(o.hopDelay)}
	s.now = func() int64 { return int64(time.Since(s.start)) }
	if o.clock != nil {
		s.now = o.clock
	}
	s.faults.init(s)
	for i, d := range s.devices {
		d.mu = &s.mu
		d.seg = s
		if len(o.drift) > 0 {
			d.clock.setDrift(ppbOf(o.drift[i%len(o.drift)]), 0)
		}
		if o.seed != nil {
			// One generator per device: its draws do not depend on
			// what the other devices do.
			d.rng = rand.New(rand.NewPCG(*o.seed, uint64(i)+1))
			d.eeprom.rng = d.rng
		}
		s.adopt(d)
	}
	s.relink()
	s.states = make([]esc.ALStatus, len(s.devices))
	s.codes = make([]esc.ALStatusCode, len(s.devices))
	for i, d := range s.devices {
		s.states[i] = esc.ALStatus{State: d.esm.state, Error: d.esm.err}
	}
	return s
}

// adopt applies the segment's options to one of its devices (when it
// joins, and again after a power cycle).
func (s *Segment) adopt(d *Device) {
	o := &s.opts
	d.eeprom.busyFrames = o.siiBusyFrames
	if o.esmDelay >= 0 {
		d.esm.delay, d.esm.framed = o.esmDelay, true
	}
	if o.mailboxDelay >= 0 && d.mbx != nil {
		d.mbx.delay, d.mbx.framed = o.mailboxDelay, true
	}
	if o.pattern != nil {
		d.pd.pattern = *o.pattern
	}
}

// relink works out which devices have a powered neighbour on their
// downstream port and updates every device's DL status to match: a device
// whose successor lost power sees no link there, and with auto loop
// control closes the port.
func (s *Segment) relink() {
	for i, d := range s.devices {
		d.hasNext = i < len(s.devices)-1 && !s.devices[i+1].off
		d.updateDLStatus()
	}
}

// Devices returns the segment's devices in line order.
func (s *Segment) Devices() []*Device { return append([]*Device(nil), s.devices...) }

// Stats returns the segment's frame counters.
func (s *Segment) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Process carries one frame through the segment in place: every device on
// the way serves each datagram (addressing, memory access, working
// counter), and bit 1 of the first source MAC byte is set, as on a frame
// that went through real devices. It returns false, and leaves the frame
// alone, when the frame is not an EtherCAT frame with a well-formed
// datagram chain (it must then not be answered); it also returns false
// when the frame is lost on an open port without a link, or to a fault
// (see Faults: a dropped frame reaches no device; a corrupted answer is
// returned true, damaged). Process does not allocate.
func (s *Segment) Process(frame []byte) bool {
	ok, _ := s.process(frame, false, -1)
	return ok
}

// process is Process; serving says the answer will be sent by Serve, which
// then holds it back for the returned time (a delay fault). at is the
// segment time the frame arrived at, -1 for now; the segment's time never
// runs backwards from one frame to the next.
func (s *Segment) process(frame []byte, serving bool, at int64) (bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Frames++
	var f wire.Frame
	logical, ok := s.decode(&f, frame)
	if !ok || s.faults.drop(logical) {
		s.stats.Dropped++
		return false, 0
	}
	s.frame++
	now := at
	if now < 0 {
		now = s.now()
	}
	now = max(now, s.lastFrame)
	s.lastFrame = now
	if logical {
		s.cycleInputs(now)
	}
	visited, lost := s.route()
	s.schedule(visited, now)
	if s.pass(visited, lost) {
		s.faults.counts.CRCErrors++
		lost = true
	}
	if lost {
		s.stats.Dropped++
		return false, 0
	}
	if logical {
		s.faults.corrupt(&f)
	}
	f.Source()[0] |= 0x02
	s.stats.Answered++
	var hold time.Duration
	if serving {
		hold = s.faults.hold()
	}
	return true, hold
}

// decode decodes frame into f and its datagrams into s.datagrams; ok is
// false for a frame that is no well-formed EtherCAT frame. logical
// reports a datagram with logical addressing (process data).
func (s *Segment) decode(f *wire.Frame, frame []byte) (logical, ok bool) {
	if err := f.Decode(frame); err != nil || f.Header.Length == 0 {
		return false, false
	}
	it := f.Datagrams()
	var dg wire.Datagram
	s.datagrams = s.datagrams[:0]
	for it.Next(&dg) {
		if dg.Command.Addressing() == wire.AddressingLogical {
			logical = true
		}
		s.datagrams = append(s.datagrams, dg)
	}
	return logical, it.Err() == nil
}

// cycleInputs lets every powered device's inputs and application take
// the step of a process data frame at time now.
func (s *Segment) cycleInputs(now int64) {
	for _, d := range s.devices {
		if d.off {
			continue
		}
		d.cycleInputs()
		if d.app != nil {
			d.app.processData(now)
		}
	}
}

// schedule sets, for each of the first visited devices, when the frame
// arrives at it and when it comes back into its downstream port, from the
// last device towards the first.
func (s *Segment) schedule(visited int, now int64) {
	var back int64
	if visited > 0 {
		back = now + int64(visited-1)*s.hops.forward + s.hops.turn
	}
	for k := visited - 1; k >= 0; k-- {
		d := s.devices[k]
		fc := frameContext{number: s.frame, arrival: now + int64(k)*s.hops.forward}
		if k < visited-1 {
			fc.back, fc.hasBack = back+s.hops.back, true
			back = fc.back + s.hops.pass
		}
		d.ctx = fc
	}
}

// pass carries the datagrams through the first visited devices and ticks
// every powered device. It reports whether a noisy cable damaged a frame
// not lost already on its way back (it is then lost too).
func (s *Segment) pass(visited int, lost bool) (damagedBack bool) {
	noisy := len(s.faults.noise) > 0
	cut := visited
	if noisy {
		cut = s.faults.noiseOut(visited)
	}
	for k := range visited {
		d := s.devices[k]
		d.advance(d.ctx.arrival)
		if k >= cut {
			continue // a damaged frame: writes are not committed (see noise.go)
		}
		for i := range s.datagrams {
			d.handle(&s.datagrams[i], &d.ctx)
		}
	}
	for _, d := range s.devices {
		if !d.off {
			d.tick(s.frame)
		}
	}
	return noisy && !lost && s.faults.noiseBack(visited, cut < visited)
}

// route returns how many devices a frame visits before it turns back, and
// whether it is lost on the way (an open port with nothing behind it).
func (s *Segment) route() (int, bool) {
	if len(s.devices) == 0 || s.devices[0].off {
		// Nothing with power behind the master's port: no link, the
		// frame goes nowhere.
		return 0, true
	}
	for k, d := range s.devices {
		next, lost := d.forwards()
		if lost {
			return k + 1, true
		}
		if !next {
			return k + 1, false
		}
	}
	return len(s.devices), false
}

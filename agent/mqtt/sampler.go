package mqtt

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
)

// The periodic publications: the sampler holds the bus being published
// (SetBus) and its state (SetBusModel), snapshots the process image,
// renders the changes of the bus's state and publishes the devices that
// are due or changed.

// deviceState is what the sampler keeps per device between snapshots.
type deviceState struct {
	next      time.Time // when the next periodic publication is due
	published bool
	seq       uint64
	last      []uint64 // raw values last published: the last good ones
	cur       []uint64 // raw values of the current snapshot
	lastF     []float64
	// data is the device's data message without payload
	// (Renderer.DataMessage), with the device located.
	data message
	// shown is the device's state as last rendered.
	shown busstate.Slave
}

// sampler holds the bus being published and renders it: its goroutine
// (run) snapshots the image every tick, and when an event may have
// changed the bus's state, and queues what is due. Its lock is the first
// taken: the writes', the refusals' and the sequencer's come after it.
type sampler struct {
	rules     Rules
	scan      time.Duration
	log       *slog.Logger
	r         Renderer
	out       *outbox
	seq       *sequencer
	ref       *refusals
	wr        *writes
	connected *atomic.Bool // the session's

	smu    sync.Mutex // guards the bus being sampled
	model  *Model
	image  ImageSource
	img    []byte
	states []deviceState
	gen    uint64          // counts SetBus calls
	state  *busstate.Model // the bus's state; nil shows every slave present
	shown  uint64          // the state's version last rendered
	dv     DeviceView      // the view of the device being rendered
	msgs   []Message       // the renderer's messages, reused
	tick   time.Duration

	// current is the published model, for readers that need no
	// snapshot (writes, commands, events).
	current atomic.Pointer[Model]

	retick      chan struct{}
	poke        chan struct{} // wakes the sampler for a change of state
	samplerDone chan struct{}
}

// run samples until closing.
func (s *sampler) run(closing <-chan struct{}) {
	defer close(s.samplerDone)
	s.smu.Lock()
	tick := s.tick
	s.smu.Unlock()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-closing:
			return
		case <-s.retick:
			s.smu.Lock()
			tick = s.tick
			s.smu.Unlock()
			t.Reset(tick)
		case <-s.poke:
			s.sampleState(time.Now())
		case now := <-t.C:
			s.sample(now, tick)
			s.ref.flush(now)
		}
	}
}

// pokeState makes the sampler render the bus's state now.
func (s *sampler) pokeState() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// setBusModel makes the sampler render the bus's state from state.
func (s *sampler) setBusModel(state *busstate.Model) {
	s.smu.Lock()
	s.state = state
	s.shown = 0
	s.tick = s.tickFor(s.model)
	s.smu.Unlock()
	s.signalRetick()
}

// setBus makes model, read from image, the bus published, and the writes
// go to commands; it queues what the renderer starts a bus with.
func (s *sampler) setBus(model *Model, image ImageSource, commands CommandSink) {
	s.smu.Lock()
	s.model, s.image = model, image
	s.gen++
	s.img = make([]byte, model.ImageBytes)
	s.states = make([]deviceState, len(model.Devices))
	cycle, ok := image.Snapshot(s.img)
	if !ok {
		clear(s.img)
	}
	v := s.viewLocked(time.Now(), cycle)
	for i := range model.Devices {
		d := &model.Devices[i]
		st := &s.states[i]
		st.next = v.Now
		st.last = make([]uint64, len(d.Signals))
		st.cur = make([]uint64, len(d.Signals))
		st.lastF = make([]float64, len(d.Signals))
		tmpl := s.r.DataMessage(d)
		st.data = tmpl.internal()
		st.data.device, st.data.dev, st.data.gen = d.Name, i, s.gen
		st.shown = s.slaveLocked(d, v.Now)
		for k := range d.Signals {
			st.last[k] = d.Signals[k].Raw(s.img)
			st.lastF[k] = d.Signals[k].Float(st.last[k])
		}
	}
	s.shown = v.version
	s.current.Store(model)
	s.wr.setSink(commands)
	s.queueLocked(s.r.Attached(s.msgs[:0], &v.BusView), &v.BusView)
	s.seq.event(v.Now, "bus-attached", func(o *jsonObject) {
		o.int("slaves", int64(len(model.Devices)))
		o.uint("cycle", cycle)
	})
	s.tick = s.tickFor(model)
	s.smu.Unlock()
	s.signalRetick()
}

// detach stops reading the image (its memory will be unmapped), shows
// each device's good data stale from now and queues what the renderer
// ends a bus with; false when no bus was attached.
func (s *sampler) detach(reason string) (at time.Time, ok bool) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.model == nil {
		return time.Time{}, false
	}
	v := s.viewLocked(time.Now(), 0)
	v.State.CycleRunning = false
	for i := range s.states {
		if st := &s.states[i]; st.shown.Quality == busstate.QualityGood {
			st.shown.Quality, st.shown.Since = busstate.QualityStale, v.Now
		}
	}
	s.queueLocked(s.r.Detached(s.msgs[:0], &v.BusView, reason), &v.BusView)
	s.seq.event(v.Now, "bus-detached", func(o *jsonObject) {
		o.string("reason", reason)
	})
	s.model, s.image = nil, nil
	s.current.Store(nil)
	return v.Now, true
}

// snapshotView is a BusView with the state version it was taken at.
type snapshotView struct {
	BusView
	version uint64
}

// viewLocked returns the bus as the sampler holds it, with the bus's
// state read now. smu is held.
func (s *sampler) viewLocked(now time.Time, cycle uint64) snapshotView {
	v := snapshotView{BusView: BusView{Model: s.model, states: s.states, Cycle: cycle, Gen: s.gen, Now: now,
		Offline: !s.connected.Load()}}
	if s.state != nil {
		v.version = s.state.Version()
		v.State, v.HasState = s.state.Snapshot(), true
	}
	return v
}

// slaveLocked returns device d's state from the bus model.
func (s *sampler) slaveLocked(d *Device, now time.Time) busstate.Slave {
	if s.state != nil {
		if sl, ok := s.state.Slave(d.Slave.Position); ok {
			return sl
		}
	}
	return presentSlave(d, now)
}

// announce returns what the renderer starts a connection with, for the
// bus attached (its devices showing the values of a new snapshot), if
// any.
func (s *sampler) announce(r Renderer, bdSeq uint64) []Message {
	s.smu.Lock()
	defer s.smu.Unlock()
	var v *BusView
	if s.model != nil {
		cycle, ok := s.image.Snapshot(s.img)
		if !ok {
			clear(s.img)
		}
		sv := s.viewLocked(time.Now(), cycle)
		sv.img = s.img
		v = &sv.BusView
	}
	return r.Announce(nil, v, bdSeq)
}

// prepareBirth readies the birth m as it is sent (Renderer.Prepare), with
// the view of its device now: the values of the last snapshot when its
// data is good; no view when the bus it was for is gone.
func (s *sampler) prepareBirth(r Renderer, m *Message) bool {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.model == nil || m.Gen != s.gen || m.Index >= len(s.states) {
		return r.Prepare(m, nil)
	}
	v := BusView{Model: s.model, states: s.states, img: s.img, Gen: s.gen, Now: time.Now(), Offline: !s.connected.Load()}
	v.device(&s.dv, m.Index)
	return r.Prepare(m, &s.dv)
}

func (s *sampler) signalRetick() {
	select {
	case s.retick <- struct{}{}:
	default:
	}
}

// tickFor returns the sampling period for model: the scan interval when a
// device publishes on change, else the shortest device interval.
func (s *sampler) tickFor(model *Model) time.Duration {
	t := s.rules.Interval
	if s.rules.OnChange || t <= 0 {
		t = s.scan
	}
	if s.state != nil {
		t = min(t, s.scan) // changes of state are noticed within a scan
	}
	if model == nil {
		return t
	}
	for _, d := range model.Devices {
		if d.OnChange {
			t = min(t, s.scan)
		}
		if d.Interval > 0 {
			t = min(t, d.Interval)
		}
	}
	return max(t, time.Millisecond)
}

// sampleState renders the changes of the bus's state only.
func (s *sampler) sampleState(now time.Time) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.state == nil || s.state.Version() == s.shown {
		return
	}
	if s.model == nil {
		// No bus attached: its state alone.
		v := s.viewLocked(now, 0)
		s.shown = v.version
		s.queueLocked(s.r.BusChanged(s.msgs[:0], &v.BusView), &v.BusView)
		return
	}
	s.renderStateLocked(now, 0)
}

// sample takes one snapshot, renders what changed in the bus's state, and
// queues the messages of the devices whose data is good and that are due
// (their interval passed) or changed (on-change devices). A device whose
// data is not good is published when its state changes only, by the
// renderer (Changed).
func (s *sampler) sample(now time.Time, tick time.Duration) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.model == nil {
		return
	}
	cycle, ok := s.image.Snapshot(s.img)
	if !ok {
		return
	}
	if s.state != nil && s.state.Version() != s.shown {
		s.renderStateLocked(now, cycle)
	}
	offline := !s.connected.Load()
	for i := range s.model.Devices {
		d := &s.model.Devices[i]
		st := &s.states[i]
		if len(d.Signals) == 0 || st.shown.Quality != busstate.QualityGood {
			continue // a coupler (nothing to publish but its meta), or data not fresh
		}
		for k := range d.Signals {
			st.cur[k] = d.Signals[k].Raw(s.img)
		}
		if !s.dueLocked(d, st, now, tick) {
			continue
		}
		for k := range d.Signals {
			st.last[k], st.lastF[k] = st.cur[k], d.Signals[k].Float(st.cur[k])
		}
		st.published = true
		st.seq++
		s.dv = DeviceView{Index: i, Device: d, Slave: st.shown, Values: st.last, Seq: st.seq, DataTopic: st.data.topic,
			Cycle: cycle, Gen: s.gen, Now: now, Offline: offline}
		m := st.data
		m.payload = s.r.Data(s.out.buffer(), &s.dv)
		m.made = now.UnixNano()
		s.out.push(m)
	}
}

// dueLocked reports whether device d is to be published now: first,
// when its interval passed (moving its next time on), or when it changed
// (on change).
func (s *sampler) dueLocked(d *Device, st *deviceState, now time.Time, tick time.Duration) bool {
	due := !st.published || (d.Interval > 0 && now.After(st.next.Add(-tick/2)))
	if !due && d.OnChange {
		due = changed(d, st)
	}
	if due && d.Interval > 0 {
		st.next = st.next.Add(d.Interval)
		if st.next.Before(now) {
			st.next = now.Add(d.Interval)
		}
	}
	return due
}

// renderStateLocked renders what changed in the bus's state since it was
// last rendered: the bus's, then each device's whose state changed.
func (s *sampler) renderStateLocked(now time.Time, cycle uint64) {
	v := s.viewLocked(now, cycle)
	s.shown = v.version
	s.queueLocked(s.r.BusChanged(s.msgs[:0], &v.BusView), &v.BusView)
	for i := range s.model.Devices {
		d := &s.model.Devices[i]
		st := &s.states[i]
		sl, ok := busstate.Slave{}, false
		for k := range v.State.Slaves {
			if v.State.Slaves[k].Position == d.Slave.Position {
				sl, ok = v.State.Slaves[k], true
				break
			}
		}
		if !ok {
			sl = presentSlave(d, now)
		}
		if sameShown(st.shown, sl) {
			continue
		}
		was := st.shown
		st.shown = sl
		if sl.Quality != busstate.QualityGood {
			st.published = false // the first good sample after this is published at once
		}
		v.device(&s.dv, i)
		s.queueLocked(s.r.Changed(s.msgs[:0], &s.dv, was), &v.BusView)
	}
}

// queueLocked queues the messages ms the renderer made of the view v, at
// v.Now. A data message without payload asks for the device's data now
// (MessageKind): it is numbered and rendered with Data.
func (s *sampler) queueLocked(ms []Message, v *BusView) {
	for i := range ms {
		m := &ms[i]
		if m.Kind != KindData || m.Payload != nil || m.Gen != s.gen || m.Index < 0 || m.Index >= len(s.states) {
			continue
		}
		st := &s.states[m.Index]
		st.seq++
		v.device(&s.dv, m.Index)
		data := st.data
		data.payload = s.r.Data(s.out.buffer(), &s.dv)
		data.exported(m)
	}
	queue(s.out, ms, v.Now)
	s.msgs = ms[:0]
}

// changed reports whether a signal of d moved beyond its deadband since it
// was last published.
func changed(d *Device, st *deviceState) bool {
	for k := range d.Signals {
		s := &d.Signals[k]
		raw := st.cur[k]
		if s.Deadband == 0 {
			if raw != st.last[k] {
				return true
			}
			continue
		}
		if f := s.Float(raw); f-st.lastF[k] > s.Deadband || st.lastF[k]-f > s.Deadband {
			return true
		}
	}
	return false
}

package mqtt

import (
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/metrics"
)

// The periodic publications: the sampler, which snapshots the process
// image, renders the changes of the bus's state and publishes the devices
// that are due or changed, and the statistics of each metrics window.

// runSampler snapshots the image every tick, and when an event may have
// changed the bus's state, and queues what is due.
func (p *Publisher) runSampler() {
	defer close(p.samplerDone)
	p.smu.Lock()
	tick := p.tick
	p.smu.Unlock()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.closing:
			return
		case <-p.retick:
			p.smu.Lock()
			tick = p.tick
			p.smu.Unlock()
			t.Reset(tick)
		case <-p.poke:
			p.sampleState(time.Now())
		case now := <-t.C:
			p.sample(now, tick)
			p.flushRefusals(now)
		}
	}
}

// sampleState renders the changes of the bus's state only.
func (p *Publisher) sampleState(now time.Time) {
	p.smu.Lock()
	defer p.smu.Unlock()
	if p.state == nil || p.state.Version() == p.shown {
		return
	}
	if p.model == nil {
		p.renderDetachedStateLocked(now) // no bus attached: its state alone
		return
	}
	p.renderStateLocked(now, 0)
}

// sample takes one snapshot, renders what changed in the bus's state, and
// queues the messages of the devices whose data is good and that are due
// (their interval passed) or changed (on-change devices). A device whose
// data is not good is published when its state changes only, by the
// scheme (changed).
func (p *Publisher) sample(now time.Time, tick time.Duration) {
	p.smu.Lock()
	defer p.smu.Unlock()
	if p.model == nil {
		return
	}
	cycle, ok := p.image.Snapshot(p.img)
	if !ok {
		return
	}
	if p.state != nil && p.state.Version() != p.shown {
		p.renderStateLocked(now, cycle)
	}
	historical := !p.connected.Load()
	tmpl := p.sch.dataMessage()
	for i := range p.model.Devices {
		d := &p.model.Devices[i]
		st := &p.states[i]
		if len(d.Signals) == 0 || st.shown.Quality != busstate.QualityGood {
			continue // a coupler (nothing to publish but its meta), or data not fresh
		}
		for k := range d.Signals {
			st.cur[k] = d.Signals[k].Raw(p.img)
		}
		due := !st.published || (d.Interval > 0 && now.After(st.next.Add(-tick/2)))
		if !due && d.OnChange {
			due = changed(d, st)
		}
		if !due {
			continue
		}
		if d.Interval > 0 {
			st.next = st.next.Add(d.Interval)
			if st.next.Before(now) {
				st.next = now.Add(d.Interval)
			}
		}
		for k := range d.Signals {
			st.last[k], st.lastF[k] = st.cur[k], d.Signals[k].Float(st.cur[k])
		}
		st.published = true
		st.seq++
		// The view is the publisher's, not a local: a scheme is an
		// interface, and a pointer passed to it would move to the heap.
		v := &p.dv
		*v = deviceView{i: i, d: d, st: st, slave: st.shown, vals: st.last, cycle: cycle, gen: p.gen, now: now}
		m := tmpl
		m.topic, m.payload, m.device, m.dev, m.gen = st.pdTopic, p.sch.data(p.out.buffer(), v, historical), d.Name, i, p.gen
		p.push(m, now)
	}
}

// renderStateLocked renders what changed in the bus's state since it was
// last rendered: the bus's, then each device's whose state changed.
func (p *Publisher) renderStateLocked(now time.Time, cycle uint64) {
	v := p.viewLocked(now, cycle)
	p.shown = v.version
	p.sch.busChanged(&v.busView)
	for i := range p.model.Devices {
		d := &p.model.Devices[i]
		st := &p.states[i]
		sl, ok := busstate.Slave{}, false
		for k := range v.state.Slaves {
			if v.state.Slaves[k].Position == d.Slave.Position {
				sl, ok = v.state.Slaves[k], true
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
		dv := v.device(i)
		p.sch.changed(dv, was)
	}
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

// Window publishes the statistics of one metrics window: on …/stats
// (JSON) or as NDATA (Sparkplug).
func (p *Publisher) Window(r *metrics.WindowReport, at time.Time) {
	p.sch.window(r, at)
}

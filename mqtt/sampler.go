package mqtt

import (
	"time"

	"github.com/ecagent/ecagent/metrics"
	"github.com/ecagent/ecagent/mqtt/sparkplug"
)

// The periodic publications: the sampler, which snapshots the process
// image and publishes the devices that are due or changed, and the
// statistics of each metrics window.

// runSampler snapshots the image every tick and queues what is due.
func (p *Publisher) runSampler() {
	defer close(p.samplerDone)
	p.mu.Lock()
	tick := p.tick
	p.mu.Unlock()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-p.closing:
			return
		case <-p.retick:
			p.mu.Lock()
			tick = p.tick
			p.mu.Unlock()
			t.Reset(tick)
		case now := <-t.C:
			p.sample(now, tick)
		}
	}
}

// sample takes one snapshot and queues the messages of the devices that
// are due (their interval passed) or changed (on-change devices).
func (p *Publisher) sample(now time.Time, tick time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.model == nil {
		return
	}
	cycle, ok := p.image.Snapshot(p.img)
	if !ok {
		return
	}
	historical := !p.connected.Load()
	for i := range p.model.Devices {
		d := &p.model.Devices[i]
		st := &p.states[i]
		if len(d.Signals) == 0 {
			continue // a coupler: nothing to publish but its meta
		}
		due := !st.published || (d.Interval > 0 && now.After(st.next.Add(-tick/2)))
		if !due && d.OnChange {
			due = p.changed(d, st)
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
			s := &d.Signals[k]
			raw := s.Raw(p.img)
			st.last[k], st.lastF[k] = raw, s.Float(raw)
		}
		st.published = true
		st.seq++
		b := p.out.buffer()
		if p.cfg.Scheme == SchemeSparkplug {
			b = p.deviceData(b, d, now, historical)
			p.queueLocked(st.pdTopic, b, 0, false, true, now)
		} else {
			b = appendProcessData(b, d, p.img, now.UnixMilli(), st.seq, cycle)
			p.queueLocked(st.pdTopic, b, p.cfg.QoS, false, false, now)
		}
	}
}

// changed reports whether a signal of d moved beyond its deadband since it
// was last published.
func (p *Publisher) changed(d *Device, st *deviceState) bool {
	for k := range d.Signals {
		s := &d.Signals[k]
		raw := s.Raw(p.img)
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
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Scheme == SchemeSparkplug {
		p.nodeStat = nodeStats(p.nodeStat[:0], r)
		var pl sparkplug.Payload
		pl.Timestamp = uint64(at.UnixMilli())
		b := sparkplug.AppendPayload(p.out.buffer(), &pl)
		historical := !p.connected.Load()
		for i := range p.nodeStat {
			m := p.nodeStat[i]
			m.Name, m.HasAlias, m.Alias, m.Historical = "", true, nodeStatAlias(i), historical
			b = sparkplug.AppendMetric(b, &m)
		}
		p.queueLocked(sparkplug.NodeTopic(p.cfg.Group, sparkplug.NDATA, p.cfg.Node), b, 0, false, true, at)
		return
	}
	p.statsSeq++
	p.queueLocked(p.cfg.Root+"/stats", appendStats(p.out.buffer(), r, at.UnixMilli(), p.statsSeq), p.cfg.QoS, false, false, at)
}

package mqtt

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Refused writes are answered in full (an info line, a command-rejected
// event, Sparkplug NDATA) up to a burst per interval; beyond it they are
// counted (ecagent_mqtt_writes_rejected_total counts every one, and
// Stats.RejectedQuiet those not answered one by one) and answered by one
// summary per interval: a flood of refused writes (10 000/s made 21.5 MB
// of log in 10 s and as many events) costs a few lines and events.

// Defaults of Config.RefusalInterval and Config.RefusalBurst.
const (
	defaultRefusalInterval = time.Second
	defaultRefusalBurst    = 10
)

// refusal is one refused write, as it is answered.
type refusal struct {
	re                   RejectError
	slave, signal, topic string
}

// refusalGate decides which refusals are answered in full, and gathers
// the others until their summary. Safe for concurrent use.
type refusalGate struct {
	interval time.Duration
	burst    int

	mu        sync.Mutex
	windowEnd time.Time // when the current interval ends
	full      int       // refusals answered in full in it
	quiet     uint64    // refusals in it not answered in full
	since     time.Time // the first of them
	last      refusal   // the last of them
}

// refusalSummary is what a gate gathered over an interval.
type refusalSummary struct {
	count        uint64
	since, until time.Time
	last         refusal
}

// admit reports whether the refusal r at now is answered in full, and
// returns the summary of the interval that ended before now, if any.
func (g *refusalGate) admit(now time.Time, r *refusal) (full bool, sum *refusalSummary) {
	g.mu.Lock()
	defer g.mu.Unlock()
	sum = g.rollLocked(now)
	if g.full < g.burst {
		g.full++
		return true, sum
	}
	if g.quiet == 0 {
		g.since = now
	}
	g.quiet++
	g.last = *r
	return false, sum
}

// roll returns the summary of the interval if it ended by now.
func (g *refusalGate) roll(now time.Time) *refusalSummary {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rollLocked(now)
}

func (g *refusalGate) rollLocked(now time.Time) *refusalSummary {
	if now.Before(g.windowEnd) {
		return nil
	}
	var sum *refusalSummary
	if g.quiet > 0 {
		sum = &refusalSummary{count: g.quiet, since: g.since, until: g.windowEnd, last: g.last}
	}
	g.windowEnd, g.full, g.quiet = now.Add(g.interval), 0, 0
	return sum
}

// rejectLocked counts a refused write and answers it on …/events, and on
// the scheme's own topics (Sparkplug: NDATA) — in full up to the gate's
// burst per interval, then by a summary. Any lock but qmu may be held.
func (p *Publisher) rejectLocked(at time.Time, re *RejectError, slave, signal, topic string) {
	p.rejectMu.Lock()
	p.rejected[re.Code]++
	p.rejectMu.Unlock()
	if p.log.Enabled(context.Background(), slog.LevelDebug) {
		p.log.Debug("mqtt: write rejected", "topic", topic, "code", string(re.Code), "reason", re.Reason)
	}
	r := refusal{re: *re, slave: slave, signal: signal, topic: topic}
	full, sum := p.refusals.admit(at, &r)
	p.summarize(sum)
	if !full {
		p.quietRejected.Add(1)
		return
	}
	p.log.Info("mqtt: write refused", "topic", topic, "code", string(re.Code), "reason", re.Reason)
	p.eventLocked(at, func(o *jsonObject) {
		o.string("kind", "command-rejected")
		o.string("code", string(re.Code))
		o.string("reason", re.Reason)
		o.string("slave", slave)
		o.string("signal", signal)
		o.string("topic", topic)
	})
	p.sch.refused(re, slave, signal, topic, at, 1)
}

// flushRefusals answers the refusals of an interval that ended by now
// with their summary; the sampler calls it, so that the summary comes
// when a flood stops too.
func (p *Publisher) flushRefusals(now time.Time) { p.summarize(p.refusals.roll(now)) }

// summarize answers the refusals of sum, if any: one warning, one
// commands-rejected event, one Sparkplug NDATA.
func (p *Publisher) summarize(sum *refusalSummary) {
	if sum == nil {
		return
	}
	l := &sum.last
	p.log.Warn("mqtt: writes refused, summarised", "count", sum.count, "since", sum.since, "until", sum.until,
		"last_topic", l.topic, "last_code", string(l.re.Code), "last_reason", l.re.Reason)
	p.eventLocked(sum.until, func(o *jsonObject) {
		o.string("kind", "commands-rejected")
		o.uint("count", sum.count)
		o.int("since", sum.since.UnixMilli())
		o.int("until", sum.until.UnixMilli())
		o.string("last_code", string(l.re.Code))
		o.string("last_reason", l.re.Reason)
		o.string("last_slave", l.slave)
		o.string("last_signal", l.signal)
		o.string("last_topic", l.topic)
	})
	p.sch.refused(&l.re, l.slave, l.signal, l.topic, sum.until, sum.count)
}

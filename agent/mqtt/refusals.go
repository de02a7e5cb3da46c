package mqtt

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
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
// the others until their summary. Its owner guards it (refusals.mu).
type refusalGate struct {
	interval time.Duration
	burst    int

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
	sum = g.roll(now)
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

// refusals counts the refused writes by reason and answers them: a log
// line, a command-rejected event and the renderer's own answer
// (Renderer.Refused), in full up to the gate's burst per interval, then
// by a summary. Safe for concurrent use; any lock but the sequencer's may
// be held when it is called.
type refusals struct {
	log       *slog.Logger
	r         Renderer
	out       *outbox
	seq       *sequencer
	connected *atomic.Bool // the session's

	mu       sync.Mutex // guards rejected and gate
	rejected map[RejectCode]uint64
	gate     refusalGate
	quiet    atomic.Uint64 // refusals answered by a summary
}

// reject counts a refused write and answers it.
func (f *refusals) reject(at time.Time, re *RejectError, slave, signal, topic string) {
	r := refusal{re: *re, slave: slave, signal: signal, topic: topic}
	f.mu.Lock()
	f.rejected[re.Code]++
	full, sum := f.gate.admit(at, &r)
	f.mu.Unlock()
	if f.log.Enabled(context.Background(), slog.LevelDebug) {
		f.log.Debug("mqtt: write rejected", "topic", topic, "code", string(re.Code), "reason", re.Reason)
	}
	f.summarize(sum)
	if !full {
		f.quiet.Add(1)
		return
	}
	f.log.Info("mqtt: write refused", "topic", topic, "code", string(re.Code), "reason", re.Reason)
	f.seq.event(at, "command-rejected", func(o *jsonObject) {
		o.string("code", string(re.Code))
		o.string("reason", re.Reason)
		o.string("slave", slave)
		o.string("signal", signal)
		o.string("topic", topic)
	})
	f.answer(&Refusal{Err: *re, Slave: slave, Signal: signal, Topic: topic, Count: 1, At: at})
}

// flush answers the refusals of an interval that ended by now with their
// summary; the sampler calls it, so that the summary comes when a flood
// stops too.
func (f *refusals) flush(now time.Time) {
	f.mu.Lock()
	sum := f.gate.roll(now)
	f.mu.Unlock()
	f.summarize(sum)
}

// summarize answers the refusals of sum, if any: one warning, one
// commands-rejected event, one answer of the renderer.
func (f *refusals) summarize(sum *refusalSummary) {
	if sum == nil {
		return
	}
	l := &sum.last
	f.log.Warn("mqtt: writes refused, summarised", "count", sum.count, "since", sum.since, "until", sum.until,
		"last_topic", l.topic, "last_code", string(l.re.Code), "last_reason", l.re.Reason)
	f.seq.event(sum.until, "commands-rejected", func(o *jsonObject) {
		o.uint("count", sum.count)
		o.int("since", sum.since.UnixMilli())
		o.int("until", sum.until.UnixMilli())
		o.string("last_code", string(l.re.Code))
		o.string("last_reason", l.re.Reason)
		o.string("last_slave", l.slave)
		o.string("last_signal", l.signal)
		o.string("last_topic", l.topic)
	})
	f.answer(&Refusal{Err: l.re, Slave: l.slave, Signal: l.signal, Topic: l.topic, Count: sum.count, At: sum.until})
}

// answer queues the renderer's answer to r.
func (f *refusals) answer(r *Refusal) {
	r.Offline = !f.connected.Load()
	queue(f.out, f.r.Refused(nil, r), r.At)
}

// counts returns the refusals by reason and those answered by a summary.
func (f *refusals) counts() (map[RejectCode]uint64, uint64) {
	byCode := map[RejectCode]uint64{}
	f.mu.Lock()
	for k, v := range f.rejected {
		byCode[k] = v
	}
	f.mu.Unlock()
	return byCode, f.quiet.Load()
}

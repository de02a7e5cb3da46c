package mqtt

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats"
)

// sequencer numbers the messages counted per kind — the statistics
// windows and the events, whose payloads carry "seq" so that a
// subscriber sees a gap where one was dropped — and queues each with its
// number, so that the outbox holds them in the order of their numbers.
// Its lock is the last one taken: any other may be held when it is
// called.
type sequencer struct {
	r         Renderer
	out       *outbox
	connected *atomic.Bool // the session's

	qmu      sync.Mutex // guards what follows
	statsSeq uint64     // statistics windows so far
	eventSeq uint64     // events so far
	msgs     []Message  // the renderer's messages, reused
}

// event queues one event, made at at: a JSON object with its time, its
// number and its kind, then the fields fill writes (none when nil).
func (q *sequencer) event(at time.Time, kind string, fill func(o *jsonObject)) {
	q.eventWith(at, kind, nil, fill)
}

// eventWith queues one event as event does, handing the renderer the
// spike of a cycle-spike event (Event.Spike) beside its JSON.
func (q *sequencer) eventWith(at time.Time, kind string, spike *SpikeEvent, fill func(o *jsonObject)) {
	q.qmu.Lock()
	defer q.qmu.Unlock()
	q.eventSeq++
	o := beginObject(q.out.buffer())
	o.int("ts", at.UnixMilli())
	o.uint("seq", q.eventSeq)
	o.string("kind", kind)
	if fill != nil {
		fill(&o)
	}
	e := Event{Stamp: q.stampLocked(at, q.eventSeq), Kind: kind, JSON: o.end(), Spike: spike}
	q.msgs = q.r.Event(q.msgs[:0], &e)
	queue(q.out, q.msgs, at)
}

// window queues the statistics of one closed window, made at at.
func (q *sequencer) window(r *cyclestats.Report, at time.Time) {
	q.qmu.Lock()
	defer q.qmu.Unlock()
	q.statsSeq++
	q.msgs = q.r.Window(q.msgs[:0], r, q.stampLocked(at, q.statsSeq))
	queue(q.out, q.msgs, at)
}

func (q *sequencer) stampLocked(at time.Time, seq uint64) Stamp {
	return Stamp{At: at, Seq: seq, Offline: !q.connected.Load()}
}

// queue pushes a renderer's messages, made at made, into the outbox, and
// clears their payloads from ms (the outbox owns them now).
func queue(out *outbox, ms []Message, made time.Time) {
	for i := range ms {
		m := ms[i].internal()
		m.made = made.UnixNano()
		out.push(m)
		ms[i] = Message{}
	}
}

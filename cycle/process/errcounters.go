package process

import (
	"context"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/internal/realtime/spsc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// The ESC error counters (0x0300–0x0313: per port invalid frames, RX
// errors, forwarded RX errors, lost links; processing unit and PDI
// errors) are what locates a bad cable or connector on a real line. The
// cycle process reads them from every slave once per errorCountersEvery,
// as acyclic datagrams that ride in the cycle's frames, all slaves'
// reads queued together (master.Bus.ReadAll), and reports a slave's block
// to the agent (shm.EventErrorCounters) when it changed.
const (
	errorCountersEvery = time.Second
	errorCountersLen   = 0x14
)

// errorCountersBus is what the poller needs of the master.
type errorCountersBus interface {
	Slaves() []*master.Slave
	Bus() *master.Bus
}

// errorCountersPoller reads every slave's error counters once per
// period and reports the blocks that changed. newErrorCountersPoller
// makes everything it needs before the cycle starts; run allocates
// nothing (the cycle process runs without its collector, and counts the
// allocations of every goroutine in its steady state).
type errorCountersPoller struct {
	m      errorCountersBus
	report func(shm.Event) bool
	every  time.Duration
	slaves []*master.Slave
	reads  []master.Read // one per slave, into bufs
	bufs   [][errorCountersLen]byte
	last   [][errorCountersLen]byte
	known  []bool
	// wake ends the wait between two rounds when ctx ends. The wait is
	// the Signal's, on a parking place made here (Prepare) whose timeout
	// is a timerfd, not a Go timer: the cycle's steady state allocates
	// nothing (spsc's TestSignalWaitAllocatesNothing).
	wake spsc.Signal
	stop func() bool
}

func newErrorCountersPoller(ctx context.Context, m errorCountersBus, report func(shm.Event) bool, every time.Duration) *errorCountersPoller {
	slaves := m.Slaves()
	p := &errorCountersPoller{m: m, report: report, every: every, slaves: slaves,
		reads: make([]master.Read, len(slaves)), bufs: make([][errorCountersLen]byte, len(slaves)),
		last: make([][errorCountersLen]byte, len(slaves)), known: make([]bool, len(slaves))}
	for i := range p.reads {
		p.reads[i] = master.Read{Register: uint16(esc.RegRxErrorCounter), Data: p.bufs[i][:]}
	}
	p.wake.Prepare(1)
	p.stop = context.AfterFunc(ctx, p.wake.Notify)
	return p
}

// run polls until ctx (the one given to newErrorCountersPoller) ends. A
// slave that does not answer is skipped until it does.
func (p *errorCountersPoller) run(ctx context.Context) {
	defer p.stop()
	for {
		for i, s := range p.slaves {
			p.reads[i].Station = s.StationAddress
		}
		// One try each; a failed read allocates nothing.
		if p.m.Bus().ReadAll(ctx, p.reads) != nil {
			return // ctx ended (the reads themselves are never too long)
		}
		for i, r := range p.reads {
			if !r.OK || r.WKC != 1 {
				continue // lost, gone or not answering: read again next round
			}
			buf := p.bufs[i]
			if p.known[i] && buf == p.last[i] {
				continue
			}
			ev := shm.Event{Kind: shm.EventErrorCounters, Slave: uint16(p.slaves[i].Position)}
			copy(ev.Text[:], buf[:])
			if !p.report(ev) {
				continue // the event queue is full: reported at the next read
			}
			p.last[i], p.known[i] = buf, true
		}
		seq := p.wake.Seq()
		if ctx.Err() != nil {
			return
		}
		p.wake.Wait(seq, p.every)
	}
}

// pollErrorCounters makes a poller and runs it until ctx ends.
func pollErrorCounters(ctx context.Context, m errorCountersBus, report func(shm.Event) bool, every time.Duration) {
	newErrorCountersPoller(ctx, m, report, every).run(ctx)
}

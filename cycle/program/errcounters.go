package program

import (
	"context"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/shm"
)

// The ESC error counters (0x0300–0x0313: per port invalid frames, RX
// errors, forwarded RX errors, lost links; processing unit and PDI
// errors) are what locates a bad cable or connector on a real line. The
// cycle process reads them from every slave once per errorCountersEvery,
// as acyclic datagrams that ride in the cycle's frames, and reports a
// slave's block to the agent (shm.EventErrorCounters) when it changed.
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
	last   [][errorCountersLen]byte
	known  []bool
	tick   *time.Ticker
}

func newErrorCountersPoller(m errorCountersBus, report func(shm.Event) bool, every time.Duration) *errorCountersPoller {
	slaves := m.Slaves()
	return &errorCountersPoller{m: m, report: report, every: every, slaves: slaves,
		last: make([][errorCountersLen]byte, len(slaves)), known: make([]bool, len(slaves)), tick: time.NewTicker(every)}
}

// run polls until ctx ends. A slave that does not answer is skipped until
// it does.
func (p *errorCountersPoller) run(ctx context.Context) {
	defer p.tick.Stop()
	var buf [errorCountersLen]byte
	for {
		for i, s := range p.slaves {
			if ctx.Err() != nil {
				return
			}
			if err := p.m.Bus().FPRD(ctx, s.StationAddress, uint16(esc.RegRxErrorCounter), buf[:]); err != nil {
				continue // gone or not answering: recovery's business
			}
			if p.known[i] && buf == p.last[i] {
				continue
			}
			ev := shm.Event{Kind: shm.EventErrorCounters, Slave: uint16(s.Position)}
			copy(ev.Text[:], buf[:])
			if !p.report(ev) {
				continue // the event queue is full: reported at the next read
			}
			p.last[i], p.known[i] = buf, true
		}
		select {
		case <-ctx.Done():
			return
		case <-p.tick.C:
		}
	}
}

// pollErrorCounters makes a poller and runs it until ctx ends.
func pollErrorCounters(ctx context.Context, m errorCountersBus, report func(shm.Event) bool, every time.Duration) {
	newErrorCountersPoller(m, report, every).run(ctx)
}

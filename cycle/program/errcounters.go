package program

import (
	"context"
	"log/slog"
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

// pollErrorCounters reads every slave's error counters once per every
// until ctx ends and reports the blocks that changed through report. A
// slave that does not answer is skipped until it does. It reuses its
// buffers: the cycle process runs without its collector.
func pollErrorCounters(ctx context.Context, m errorCountersBus, report func(shm.Event) bool, every time.Duration, log *slog.Logger) {
	slaves := m.Slaves()
	last := make([][errorCountersLen]byte, len(slaves))
	known := make([]bool, len(slaves))
	var buf [errorCountersLen]byte
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for i, s := range slaves {
			if ctx.Err() != nil {
				return
			}
			if err := m.Bus().FPRD(ctx, s.StationAddress, uint16(esc.RegRxErrorCounter), buf[:]); err != nil {
				continue // gone or not answering: recovery's business
			}
			if known[i] && buf == last[i] {
				continue
			}
			ev := shm.Event{Kind: shm.EventErrorCounters, Slave: uint16(s.Position)}
			copy(ev.Text[:], buf[:])
			if !report(ev) {
				log.Debug("error counters not reported: the event queue is full", "slave", s.Position)
				continue // reported again at the next read
			}
			last[i], known[i] = buf, true
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

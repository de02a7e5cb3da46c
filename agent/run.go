package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/rt"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/esc"
)

// Run opens the segment, brings the bus to OP and runs the cycle until ctx
// ends, writing a one-line status to status every cfg.Status.Interval. On
// the way out it takes the slaves back to INIT so their outputs go to
// their safe state.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, status io.Writer) error {
	seg, err := OpenSegment(cfg, log)
	if err != nil {
		return err
	}
	defer seg.Close()
	m, err := master.New(seg.Link, MasterConfig(cfg, log))
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.BringUp(ctx); err != nil {
		return fmt.Errorf("bring-up: %w", err)
	}
	log.Info("bus in OP", "slaves", len(m.Slaves()), "period", cfg.Cycle.Period,
		"expected_wkc", m.Cyclic().ExpectedWKC(), "frames", m.Cyclic().Frames())

	var c cycleFigures
	var wg sync.WaitGroup
	statusCtx, stopStatus := context.WithCancel(ctx)
	if cfg.Status.Interval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reportStatus(statusCtx, status, cfg.Status.Interval, m, &c, cfg.Cycle.Period)
		}()
	}
	runCycle(ctx, m, cfg.Cycle.Period, &c)
	stopStatus()
	wg.Wait()

	// Leave the segment safe: outputs of slaves below SAFEOP go to their
	// safe values. The cycle's context is done, so use a fresh bounded one.
	down, cancel := context.WithTimeout(context.Background(), cfg.Bus.StateTimeout)
	defer cancel()
	if err := m.RequestState(down, esc.StateInit); err != nil && !errors.Is(err, context.Canceled) {
		log.Warn("taking the bus to INIT on exit", "err", err)
	}
	writeStatus(status, m, &c, cfg.Cycle.Period)
	return nil
}

// cycleFigures are what the cycle publishes for the status line: written by
// the cycle goroutine with atomic operations only (no lock is shared with
// it), read and reset by the status reporter.
type cycleFigures struct {
	overruns atomic.Uint64 // cycles that ended after the next deadline
	skipped  atomic.Uint64 // deadlines skipped to get back on schedule
	lastWKC  atomic.Uint32
	// busState packs the last cycle's AL status read: responding slaves
	// <<16 | error flag <<8 | OR of the state nibbles; 0 when lost.
	busState   atomic.Uint32
	maxWakeNs  atomic.Int64 // worst wake-up latency since the last status line
	maxJobNs   atomic.Int64 // worst wake-to-end time since the last status line
	allWakeMax atomic.Int64
	allJobMax  atomic.Int64
}

func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// runCycle runs the cyclic exchange on a locked thread, sleeping to
// absolute deadlines on CLOCK_MONOTONIC. A cycle that ends after the next
// deadline counts as an overrun and the schedule skips the deadlines it
// missed instead of bursting to catch up. It allocates nothing per cycle.
// (The real-time engine with its own process, priority and samples
// replaces this loop; it keeps the same schedule rules.)
func runCycle(ctx context.Context, m *master.Master, period time.Duration, c *cycleFigures) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	p := int64(period)
	done := ctx.Done()
	next := rt.Now() + p
	for {
		select {
		case <-done:
			return
		default:
		}
		rt.SleepUntil(next)
		wake := rt.Now()
		// The frames may use the rest of this cycle, not the next one.
		res := m.ExchangeUntil(time.Now().Add(time.Duration(next + p - wake)))
		end := rt.Now()
		c.lastWKC.Store(uint32(res.WKC))
		if res.Responding > 0 {
			var e uint32
			if res.ALError {
				e = 1
			}
			c.busState.Store(uint32(res.Responding)<<16 | e<<8 | uint32(res.ALStates))
		}
		storeMax(&c.maxWakeNs, wake-next)
		storeMax(&c.maxJobNs, end-wake)
		next += p
		if end > next {
			missed := (end-next)/p + 1
			c.overruns.Add(1)
			c.skipped.Add(uint64(missed))
			next += missed * p
		}
	}
}

func reportStatus(ctx context.Context, w io.Writer, every time.Duration, m *master.Master, c *cycleFigures, period time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			writeStatus(w, m, c, period)
		}
	}
}

// writeStatus prints one status line and starts a new interval for the
// worst-case figures.
func writeStatus(w io.Writer, m *master.Master, c *cycleFigures, period time.Duration) {
	st := m.Stats()
	wake, job := c.maxWakeNs.Swap(0), c.maxJobNs.Swap(0)
	storeMax(&c.allWakeMax, wake)
	storeMax(&c.allJobMax, job)
	fmt.Fprintf(w, "%s %s  slaves %d  cycles %d  period %v  wkc %d/%d  lost %d  wkc-errors %d  overruns %d  wake-max %v  job-max %v\n",
		time.Now().Format("15:04:05"), busState(m, c), len(m.Slaves()), st.Cycles, period,
		c.lastWKC.Load(), m.Cyclic().ExpectedWKC(), st.LostFrames, st.WKCErrors, c.overruns.Load(),
		time.Duration(wake).Round(time.Microsecond), time.Duration(job).Round(time.Microsecond))
}

// busState describes the bus as the last cycle's AL status read saw it:
// OP when every slave answered in OP, otherwise the states present (the OR
// of their state nibbles), +ERR when one shows an error, and how many
// slaves answered when some did not. Before the first cycle it falls back
// to the states bring-up read.
func busState(m *master.Master, c *cycleFigures) string {
	v := c.busState.Load()
	if v == 0 {
		low := esc.StateOp
		for _, s := range m.Slaves() {
			low = min(low, s.State())
		}
		return low.String()
	}
	responding, errFlag, states := int(v>>16), v>>8&1 != 0, esc.ALState(v&0xFF)
	s := states.String()
	if !states.Valid() {
		s = fmt.Sprintf("MIXED(%#02x)", uint8(states))
	}
	if errFlag {
		s += "+ERR"
	}
	if n := len(m.Slaves()); responding != n {
		s += fmt.Sprintf(" (%d/%d answering)", responding, n)
	}
	return s
}

package master

import (
	"context"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// BringUp takes the segment from whatever state it is in to OP:
//
//	Scan → PREOP (mailboxes configured) → map the process image →
//	with Config.DC: distributed clocks (ConfigureDCWith) and SYNC signals
//	(ConfigureSync) → SAFEOP (process-data SyncManagers and FMMUs configured) →
//	Config.SafeOpFrames cyclic frames, so that inputs are valid and outputs
//	safe → OP (cyclic frames keep running while the slaves switch) →
//	one cycle to check the working counter.
//
// It logs one line per step. On success the cycle engine calls Exchange;
// on error the slaves are left where they stopped. The cyclic frames poll
// the slaves' mailboxes for CoE emergencies and, with Config.DC, carry the
// drift compensation (see Cyclic). A segment without a clock with a system
// time fails with Config.DC set (an error matching dc.ErrNoReference).
func (m *Master) BringUp(ctx context.Context) error {
	start := time.Now()
	slaves, err := m.Scan(ctx)
	if err != nil {
		return err
	}
	m.log.Info("bring-up: scanned", "slaves", len(slaves))

	if err := m.RequestState(ctx, esc.StatePreOp); err != nil {
		return fmt.Errorf("master: bring-up to PREOP: %w", err)
	}
	m.log.Info("bring-up: PREOP")
	for _, s := range slaves {
		if err := m.runPreOpStartup(ctx, s); err != nil {
			return fmt.Errorf("master: bring-up: %w", err)
		}
	}

	if err := m.readPDOConfiguration(ctx); err != nil {
		return fmt.Errorf("master: bring-up: %w", err)
	}
	if err := m.checkProcessData(slaves); err != nil {
		return fmt.Errorf("master: bring-up: the process data is not as configured: %w", err)
	}

	if _, err := m.MapProcessImage(); err != nil {
		return fmt.Errorf("master: bring-up: %w", err)
	}
	if m.cfg.DC != nil {
		if err := m.setUpDC(ctx, m.cfg.DC); err != nil {
			return fmt.Errorf("master: bring-up: distributed clocks: %w", err)
		}
	}
	if err := m.RequestState(ctx, esc.StateSafeOp); err != nil {
		return fmt.Errorf("master: bring-up to SAFEOP: %w", err)
	}
	m.log.Info("bring-up: SAFEOP")

	var r CycleResult
	for range m.cfg.SafeOpFrames {
		r = m.cyclic.exchange(time.Now().Add(m.cfg.CycleTimeout))
	}
	m.log.Info("bring-up: SAFEOP frames exchanged", "frames", m.cfg.SafeOpFrames, "wkc", r.WKC,
		"expected_wkc", r.ExpectedWKC, "lost", r.Lost)

	if err := m.RequestState(ctx, esc.StateOp); err != nil {
		return fmt.Errorf("master: bring-up to OP: %w", err)
	}
	r = m.firstCycleInOP(ctx)
	if r.Err != nil {
		if r.Lost == 0 && r.WKC != r.ExpectedWKC {
			return fmt.Errorf("master: bring-up: first cycle in OP: %w",
				&WKCError{Command: wire.LRW, Address: logicalBase, Want: r.ExpectedWKC, Got: r.WKC})
		}
		return fmt.Errorf("master: bring-up: first cycle in OP: %w", r.Err)
	}
	if !r.AllInState(len(slaves), esc.StateOp) {
		m.log.Warn("bring-up: AL status read of the first cycle in OP disagrees", "responding", r.Responding,
			"slaves", len(slaves), "states", fmt.Sprintf("%#02x", r.ALStates), "error", r.ALError)
	}
	m.log.Info("bring-up: OP", "slaves", len(slaves), "expected_wkc", r.ExpectedWKC,
		"image_bytes", len(m.image.Bytes()), "took", time.Since(start).Round(time.Microsecond).String())
	return nil
}

// firstCycleInOP runs the first cycle in OP, whose working counter
// BringUp checks. Its frames may come back late on a loaded host (the
// segment's answers, or the simulator serving them, delayed past
// Config.CycleTimeout): a lost frame says nothing of the slaves, so the
// cycle runs again, each time waiting as long as a bring-up frame's
// first try (the longer of Config.Timeout and the measured round trip),
// until its frames come back or Config.StateTimeout has passed.
func (m *Master) firstCycleInOP(ctx context.Context) CycleResult {
	until := time.Now().Add(m.cfg.StateTimeout)
	wait := m.cfg.CycleTimeout
	for {
		r := m.cyclic.exchange(time.Now().Add(wait))
		if r.Lost == 0 || ctx.Err() != nil || time.Now().After(until) {
			return r
		}
		wait = max(m.cfg.CycleTimeout, m.bus.tryTimeout(0))
		m.log.Debug("bring-up: the first cycle in OP lost its frames; again", "lost", r.Lost, "next_wait", wait)
	}
}

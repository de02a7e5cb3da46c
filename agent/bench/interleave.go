package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ecagent/ecagent/agent/config"
)

// RunInterleaved runs the comparison with cyclictest fairly on a shared
// host: blocks blocks (BlockOrder: ABBA) alternate between ecagent's cycle
// (a cycle process run as Run does, for o.Cycles cycles) and ct (for
// o.Cycles loops with o.HistogramMicros bins; its interval, priority and
// core should be the cycle's), one after the other, never at once. Both
// sides thus sample the same stretches of the host's noise, which a run of
// each, one after the other, does not.
//
// The returned report covers ecagent's blocks together (cycles, faults and
// the distributions of all of them; the duration is the sum of the
// blocks'), with the comparison in Comparison when every block ran. On an
// error (ctx ended, a cycle process or cyclictest failed) it stops there
// and returns the report of the ecagent blocks run so far, marked
// Interrupted, without a comparison.
func RunInterleaved(ctx context.Context, cfg config.Config, o Options, ct Cyclictest, blocks int, log *slog.Logger) (*Report, error) {
	order, err := BlockOrder(blocks)
	if err != nil {
		return nil, err
	}
	if o.Cycles < 2 {
		return nil, fmt.Errorf("bench: %d cycles per block, want at least 2", o.Cycles)
	}
	ct.Loops, ct.HistogramMicros = o.Cycles, o.HistogramMicros
	if err := ct.Check(); err != nil {
		return nil, err
	}
	pairs := uint64(blocks / 2)
	rec, err := NewRecorder(time.Duration(cfg.Cycle.Period), o.Cycles*pairs, o.HistogramMicros)
	if err != nil {
		return nil, err
	}
	var (
		lat     []LatencyBlock
		union   *RunInfo
		cmdline string
		runErr  error
	)
	for i, side := range order {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "block %d of %d: %v, %d cycles of %v\n", i+1, len(order), side, o.Cycles, time.Duration(cfg.Cycle.Period))
		}
		if side == SideEcagent {
			run, err := runBlock(ctx, cfg, o, log, rec)
			if run != nil {
				union = joinRunInfo(union, run)
			}
			if err != nil {
				runErr = err
				break
			}
			lat = append(lat, rec.Block())
			continue
		}
		r, err := ct.Run(ctx)
		var b LatencyBlock
		if err == nil {
			b, err = CyclictestBlock(r, o.HistogramMicros)
		}
		if err != nil {
			runErr = err
			break
		}
		cmdline = r.Cmdline
		lat = append(lat, b)
	}
	if union == nil {
		return nil, runErr
	}
	union.Requested = o.Cycles * pairs
	union.Interrupted = union.Interrupted || runErr != nil
	rep, err := rec.Report(*union)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	if runErr != nil {
		return rep, runErr
	}
	c, err := CompareBlocks(order, lat)
	if err != nil {
		return rep, err
	}
	c.BlockCycles, c.Block = o.Cycles, time.Duration(o.Cycles)*time.Duration(cfg.Cycle.Period)
	c.Cmdline, c.BusyWait = cmdline, time.Duration(cfg.Cycle.BusyWait)
	rep.Comparison = c
	return rep, nil
}

// joinRunInfo adds block b to the run information of the blocks before
// (nil for none): the first block's start and settings, the last one's
// end, drops, frames, scrapes and windows added up.
func joinRunInfo(u, b *RunInfo) *RunInfo {
	if u == nil {
		c := *b
		if b.Telemetry != nil {
			t := *b.Telemetry
			c.Telemetry = &t
		}
		return &c
	}
	u.End = b.End
	u.RingDrops += b.RingDrops
	u.FramesSent += b.FramesSent
	u.FramesLost += b.FramesLost
	u.Interrupted = u.Interrupted || b.Interrupted
	if u.Telemetry != nil && b.Telemetry != nil {
		u.Telemetry.Address = b.Telemetry.Address
		u.Telemetry.Scrapes += b.Telemetry.Scrapes
		u.Telemetry.ScrapeErrors += b.Telemetry.ScrapeErrors
		u.Telemetry.Windows += b.Telemetry.Windows
	}
	return u
}

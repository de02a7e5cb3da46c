package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/sim"
)

// Segment is the wire the master talks on: a raw socket on a network
// interface, or a socket pair to a simulated segment served by its own
// goroutine.
type Segment struct {
	// Link carries the master's frames.
	Link link.Link
	// Sim is the simulated segment behind Link, nil on a real interface.
	Sim *sim.Segment

	close func()
}

// OpenSegment opens the segment cfg.Bus describes. With an empty
// bus.interface it builds the simulated devices of bus.devices and serves
// them until Close — not until ctx ends, so that the master can still take
// the bus down after its own context is cancelled.
func OpenSegment(cfg config.Config, log *slog.Logger) (*Segment, error) {
	if !cfg.Simulated() {
		l, err := link.Open(cfg.Bus.Interface, nil)
		if err != nil {
			return nil, fmt.Errorf("open segment: %w", err)
		}
		return &Segment{Link: l, close: func() { _ = l.Close() }}, nil
	}
	devs, err := sim.ParseDevices(cfg.Bus.Devices)
	if err != nil {
		return nil, fmt.Errorf("open simulated segment: %w", err)
	}
	seg := sim.NewSegment(devs)
	// A socket pair rather than the channel-based pipe: the cycle thread then
	// waits in ppoll like on a real NIC, instead of parking in the Go
	// scheduler, whose wake-ups of a locked thread cost milliseconds here.
	masterEnd, simEnd, err := link.NewSocketPair()
	if err != nil {
		return nil, fmt.Errorf("open simulated segment: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := seg.Serve(ctx, simEnd)
		switch {
		case err == nil, ctx.Err() != nil, errors.Is(err, link.ErrClosed):
			// Stopped, or the wire closed (the master closes its end
			// when it is done): the normal end of a simulated segment.
			log.Debug("simulated segment stopped", "err", err)
		default:
			log.Error("simulated segment stopped", "err", err)
		}
	}()
	log.Info("simulated segment", "devices", len(devs), "models", cfg.Bus.Devices)
	return &Segment{Link: masterEnd, Sim: seg, close: func() {
		cancel()
		_ = masterEnd.Close()
		_ = simEnd.Close()
		wg.Wait()
	}}, nil
}

// Close closes the link and stops a simulated segment. It is safe to call
// more than once.
func (s *Segment) Close() {
	if s.close != nil {
		s.close()
		s.close = nil
	}
}

// MasterConfig maps the agent configuration onto the master's.
func MasterConfig(cfg config.Config, log *slog.Logger) *master.Config {
	mc := &master.Config{
		Timeout:        cfg.Bus.Timeout,
		StateTimeout:   cfg.Bus.StateTimeout,
		ExpectedSlaves: cfg.Bus.ExpectedSlaves,
		Logger:         log,
	}
	if dc := cfg.Bus.DC; dc.Enabled {
		frames := dc.DriftFrames
		if frames == 0 {
			frames = -1 // the configuration's 0 is "none", the master's "default"
		}
		mc.DC = &master.DCConfig{DriftFrames: frames, Sync0: cfg.Cycle.Period, Sync0Shift: dc.Sync0Shift,
			Sync1: dc.Sync1, StartDelay: dc.StartDelay}
	}
	for _, p := range cfg.Bus.PDO {
		mc.PDO = append(mc.PDO, master.SlavePDOConfig{Position: p.Slave, RxPDOs: pdoConfigs(p.RxPDOs),
			TxPDOs: pdoConfigs(p.TxPDOs)})
	}
	return mc
}

// pdoConfigs translates configured PDOs; nil stays nil (keep the slave's).
func pdoConfigs(pdos []config.PDO) []master.PDOConfig {
	if pdos == nil {
		return nil
	}
	out := make([]master.PDOConfig, len(pdos))
	for i, p := range pdos {
		out[i].Index = p.Index
		if len(p.Entries) == 0 {
			continue // assign only: keep the PDO's mapping
		}
		for _, e := range p.Entries {
			out[i].Entries = append(out[i].Entries, master.PDOEntryConfig{Index: e.Index, SubIndex: e.SubIndex, Bits: e.Bits})
		}
	}
	return out
}

package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
)

// segment is the wire the master of a toolbox command (scan, sdo) talks
// on outside the agent: a raw socket on a network interface, or a socket
// pair to a simulated segment served by its own goroutine.
type segment struct {
	// Link carries the master's frames.
	Link link.Link
	// Sim is the simulated segment behind Link, nil on a real interface.
	Sim *sim.Segment

	close func()
}

// openSegment opens the segment cfg.Bus describes. With an empty
// bus.interface it builds the simulated devices of bus.devices and serves
// them until Close — not until ctx ends, so that the master can still take
// the bus down after its own context is cancelled.
func openSegment(cfg config.Config, log *slog.Logger) (*segment, error) {
	if !cfg.Simulated() {
		l, err := link.Open(cfg.Bus.Interface, nil)
		if err != nil {
			return nil, fmt.Errorf("open segment: %w", err)
		}
		return &segment{Link: l, close: func() { _ = l.Close() }}, nil
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
	return &segment{Link: masterEnd, Sim: seg, close: func() {
		cancel()
		_ = masterEnd.Close()
		_ = simEnd.Close()
		wg.Wait()
	}}, nil
}

// Close closes the link and stops a simulated segment. It is safe to call
// more than once.
func (s *segment) Close() {
	if s.close != nil {
		s.close()
		s.close = nil
	}
}

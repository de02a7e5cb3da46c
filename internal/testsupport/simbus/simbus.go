// Package simbus brings a simulated segment up behind a master over an
// in-process pipe, for tests of the packages above the master (cycle
// engine, agent, MQTT) that need a bus in OP and nothing else.
package simbus

import (
	"context"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/sim"
)

// Start builds the simulated devices (model names or SII image paths),
// serves them on one end of a pipe and brings a master on the other end
// to OP. Timeouts are generous: tests share a busy machine. Everything is
// closed when the test ends.
func Start(tb testing.TB, devices []string, cfg master.Config) (*master.Master, *sim.Segment) {
	tb.Helper()
	devs, err := sim.ParseDevices(devices)
	if err != nil {
		tb.Fatal(err)
	}
	seg := sim.NewSegment(devs)
	a, b := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = seg.Serve(ctx, b); close(done) }()
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	if cfg.CycleTimeout == 0 {
		cfg.CycleTimeout = time.Second
	}
	if cfg.SIITimeout == 0 {
		cfg.SIITimeout = time.Second
	}
	m, err := master.New(a, &cfg)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = m.Close(); cancel(); _ = b.Close(); <-done })
	if err := m.BringUp(ctx); err != nil {
		tb.Fatal(err)
	}
	return m, seg
}

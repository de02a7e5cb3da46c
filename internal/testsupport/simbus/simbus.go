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
	"github.com/ecagent/ecagent/sim"
)

// Start builds the simulated devices (model names or SII image paths),
// serves them on one end of a pipe and brings a master on the other end
// to OP. Timeouts are generous: tests share a busy machine. Everything is
// closed when the test ends.
func Start(tb testing.TB, devices []string, cfg master.Config) (*master.Master, *sim.Segment) {
	tb.Helper()
	return StartOn(tb, devices, cfg, func(p *link.PipeEnd) link.Link { return p })
}

// StartOn is Start with the master's end of the pipe seen through wrap.
func StartOn(tb testing.TB, devices []string, cfg master.Config, wrap func(*link.PipeEnd) link.Link) (*master.Master, *sim.Segment) {
	tb.Helper()
	_, seg, end := Serve(tb, devices)
	if cfg.Timeout == 0 {
		cfg.Timeout = time.Second
	}
	if cfg.CycleTimeout == 0 {
		cfg.CycleTimeout = time.Second
	}
	if cfg.SIITimeout == 0 {
		cfg.SIITimeout = time.Second
	}
	m, err := master.New(wrap(end.(*link.PipeEnd)), &cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = m.Close() })
	if err := m.BringUp(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return m, seg
}

// Serve builds the simulated devices (model names or SII image paths)
// with opts, serves them on one end of an in-process pipe until the test
// ends, and returns the devices, their segment and the pipe's other end,
// for a master. A master made on it must be closed first: a cleanup
// registered after Serve's runs before it.
func Serve(tb testing.TB, devices []string, opts ...sim.Option) ([]*sim.Device, *sim.Segment, link.Link) {
	tb.Helper()
	devs, err := sim.ParseDevices(devices)
	if err != nil {
		tb.Fatal(err)
	}
	seg := sim.NewSegment(devs, opts...)
	masterEnd, simEnd := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = seg.Serve(ctx, simEnd) }()
	tb.Cleanup(func() { cancel(); _ = simEnd.Close(); <-done })
	return devs, seg, masterEnd
}

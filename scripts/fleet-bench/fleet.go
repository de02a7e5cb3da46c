package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/agent/metrics/otlp"
	"github.com/ecagent/ecagent/agent/rtcheck"
	"github.com/ecagent/ecagent/shm"
)

// referenceSegment is the default 7-slave segment of the tests and the
// docs (the order codes the agent uses as slave names).
var referenceSegment = []string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"}

// linePeriods are the cycle periods the lines run, in turn: a fleet mixes
// fast servo lines and slow I/O lines.
var linePeriods = []time.Duration{time.Millisecond, time.Millisecond, 500 * time.Microsecond, 2 * time.Millisecond, 250 * time.Microsecond}

// host is one emulated agent: the real metrics registry (and, for a host
// that pushes, the real OTLP exporter) fed by synthetic cycle samples. One
// worker goroutine owns it (feed, CloseWindow, the bus model's events);
// the registry is gathered by scrapes at any time.
type host struct {
	site, line, name string
	lineIndex        int
	period           time.Duration
	dc               bool
	push             bool // OTLP instead of scrape

	reg   *metrics.Registry
	model *busstate.Model
	exp   *otlp.Exporter
	srv   *metrics.Server
	addr  string

	rng *rand.Rand
	// Jitter model: the wake-up latency is base + a log-normal part of
	// median scale, with rare spikes; a regression multiplies scale.
	base, scale float64 // ns
	regressed   atomic.Bool

	cycle       uint64
	deadline    int64
	sent, lost  uint64
	lostSlave   int       // position of the slave lost now, -1 when none
	lostUntil   time.Time // when it answers again
	nextLoss    time.Time // when a slave is lost next
	nextWindow  time.Time
	window      time.Duration
	sampleCarry float64
}

// fleetOptions shape the emulated fleet.
type fleetOptions struct {
	hosts, hostsPerLine, linesPerSite int
	pushEvery                         int // every pushEvery-th host pushes OTLP (0: none)
	rate                              float64
	window                            time.Duration
	otlpEndpoint                      string
	otlpInterval                      time.Duration
	seed                              uint64
}

// fleet is every emulated host and the workers that feed them.
type fleet struct {
	opts  fleetOptions
	hosts []*host
}

// newFleet builds the hosts: registries, bus models, OTLP exporters and,
// for the scraped hosts, their metrics endpoints on loopback.
func newFleet(ctx context.Context, o fleetOptions, log *slog.Logger) (*fleet, error) {
	checks := rtcheck.Run(ctx, rtcheck.DefaultOptions()) // this host's verdicts, for every emulated host
	f := &fleet{opts: o}
	quiet := slog.New(slog.DiscardHandler)
	for i := range o.hosts {
		li := i / o.hostsPerLine
		h := &host{
			site:      fmt.Sprintf("site-%02d", li/o.linesPerSite),
			line:      fmt.Sprintf("line-%03d", li),
			name:      fmt.Sprintf("edge-%04d", i),
			lineIndex: li,
			period:    linePeriods[li%len(linePeriods)],
			dc:        li%2 == 0,
			push:      o.pushEvery > 0 && i%o.pushEvery == o.pushEvery-1,
			rng:       rand.New(rand.NewPCG(o.seed, uint64(i))),
			lostSlave: -1,
			window:    o.window,
		}
		// A healthy host: wake-up latency of a few µs with a tail; p99
		// jitter between 1 % and 3 % of the period, the hosts differing.
		h.base = 2000
		h.scale = float64(h.period.Nanoseconds()) * (0.002 + 0.004*h.rng.Float64())
		reg, err := metrics.NewRegistry(metrics.Options{Site: h.site, Line: h.line, Host: h.name,
			Target: h.period, Window: o.window, CycleCore: -1, Version: "fleet-bench"})
		if err != nil {
			return nil, fmt.Errorf("host %s: %w", h.name, err)
		}
		h.reg = reg
		h.model = busstate.New(nil)
		slaves := make([]metrics.Slave, len(referenceSegment))
		infos := make([]busstate.SlaveInfo, len(referenceSegment))
		for p, name := range referenceSegment {
			slaves[p] = metrics.Slave{Position: p, Name: name}
			infos[p] = busstate.SlaveInfo{Position: p, Name: name}
		}
		reg.CycleProcessStarted(os.Getpid())
		reg.SetSlaves(slaves)
		h.model.Reset(infos)
		reg.SetBusModel(h.model)
		for p, name := range referenceSegment {
			reg.SetSlaveErrorCounters(p, name, metrics.ESCErrorCounters{})
		}
		dc := metrics.DCSettings{ReferencePosition: -1}
		if h.dc {
			dc = metrics.DCSettings{Enabled: true, ReferencePosition: 1, Sync0Cycle: h.period, Sync0Shift: h.period / 4}
		}
		reg.SetDC(dc)
		for _, s := range []metrics.RTSetting{metrics.RTSchedFIFO, metrics.RTAffinity, metrics.RTMlock, metrics.RTDMALatency} {
			reg.SetRTSetting(s, true)
		}
		reg.SetMaintenanceSocket("/run/ecagent/cycle.sock", true)
		for _, c := range checks {
			_ = reg.SetRTCheck(c.ID, metrics.CheckStatus(c.Status.String()))
		}
		if h.push {
			h.exp, err = otlp.New(ctx, otlp.Options{Endpoint: o.otlpEndpoint, Protocol: otlp.ProtocolHTTPProtobuf,
				Interval: o.otlpInterval, Site: h.site, Line: h.line, Host: h.name, Version: "fleet-bench", Target: h.period})
			if err != nil {
				return nil, fmt.Errorf("host %s: otlp: %w", h.name, err)
			}
		} else {
			h.srv, err = metrics.NewServer(reg, metrics.ServerOptions{Listen: "127.0.0.1:0", Ready: func() error { return nil },
				Version: "fleet-bench", Logger: quiet})
			if err != nil {
				return nil, fmt.Errorf("host %s: metrics endpoint: %w", h.name, err)
			}
			h.addr = h.srv.Addr().String()
			go func() { _ = h.srv.Run(ctx) }()
		}
		now := time.Now()
		h.nextWindow = now.Add(o.window)
		h.nextLoss = now.Add(time.Duration(h.rng.ExpFloat64() * float64(10*time.Minute)))
		h.deadline = now.UnixNano()
		f.hosts = append(f.hosts, h)
	}
	log.Info("fleet built", "hosts", len(f.hosts), "scraped", len(f.scraped()), "otlp", len(f.hosts)-len(f.scraped()))
	return f, nil
}

// scraped returns the hosts served for scraping.
func (f *fleet) scraped() []*host {
	var out []*host
	for _, h := range f.hosts {
		if !h.push {
			out = append(out, h)
		}
	}
	return out
}

// run feeds every host until ctx ends: workers goroutines, each owning a
// share of the hosts, ten times a second.
func (f *fleet) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []*host
			for i := w; i < len(f.hosts); i += workers {
				mine = append(mine, f.hosts[i])
			}
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			var buf shm.Sample
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-tick.C:
					for _, h := range mine {
						h.step(now, f.opts.rate/10, &buf)
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, h := range f.hosts {
		if h.exp != nil {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = h.exp.Shutdown(sctx)
			cancel()
		}
	}
}

// step feeds one tick's samples, closes a window when due and lets the
// bus lose or find a slave.
func (h *host) step(now time.Time, samples float64, s *shm.Sample) {
	h.sampleCarry += samples
	n := int(h.sampleCarry)
	h.sampleCarry -= float64(n)
	c := h.reg.Consumer()
	for range n {
		h.sample(s)
		c.Observe(s)
		if h.exp != nil {
			h.exp.Observe(s)
		}
	}
	var seg cyclestats.SegmentCounts
	seg[cyclestats.CounterFramesSent], seg[cyclestats.CounterFramesLost] = h.sent, h.lost
	seg[cyclestats.CounterLinkReceived] = h.sent - h.lost
	c.SetSegment(seg)
	if h.exp != nil {
		h.exp.SetSegment(seg)
	}
	if !now.Before(h.nextWindow) {
		h.nextWindow = h.nextWindow.Add(h.window)
		r := c.CloseWindow()
		if h.exp != nil {
			h.exp.Window(r)
		}
	}
	h.bus(now)
}

// bus loses a slave now and then (about every 10 minutes a host, for 5 to
// 30 s) and finds it again, through the same events and counters the
// agent folds from the cycle process.
func (h *host) bus(now time.Time) {
	switch {
	case h.lostSlave < 0 && now.After(h.nextLoss):
		h.lostSlave = 1 + h.rng.IntN(len(referenceSegment)-1)
		h.lostUntil = now.Add(5*time.Second + time.Duration(h.rng.Int64N(int64(25*time.Second))))
		h.model.Apply(&shm.Event{Kind: shm.EventSlaveLost, Slave: uint16(h.lostSlave)})
		h.reg.CountEvent(shm.EventSlaveLost.String(), h.lostSlave, referenceSegment[h.lostSlave])
	case h.lostSlave >= 0 && now.After(h.lostUntil):
		h.model.Apply(&shm.Event{Kind: shm.EventSlaveFound, Slave: uint16(h.lostSlave)})
		h.reg.CountEvent(shm.EventSlaveFound.String(), h.lostSlave, referenceSegment[h.lostSlave])
		h.lostSlave = -1
		h.nextLoss = now.Add(time.Duration(h.rng.ExpFloat64() * float64(10*time.Minute)))
	}
}

// sample makes the next cycle sample: the deadline advances by one
// period, the wake-up comes a synthetic latency after it, the frame takes
// a round trip of 20–40 µs, the job 10–25 % of the period; a frame is
// lost once in 100 000 cycles (once in 50 while a slave is lost, which
// also breaks the working counter); with distributed clocks, the DC
// difference and the controller error are measured.
func (h *host) sample(s *shm.Sample) {
	p := h.period.Nanoseconds()
	h.deadline += p
	lat := h.latency()
	*s = shm.Sample{Cycle: h.cycle, Deadline: h.deadline, Wake: h.deadline + lat}
	h.cycle++
	s.Send = s.Wake + 3000 + h.rng.Int64N(2000)
	rtt := 20000 + h.rng.Int64N(20000)
	s.Recv = s.Send + rtt
	s.End = s.Wake + p/10 + h.rng.Int64N(p/7)
	wkc := uint16(3 * len(referenceSegment))
	s.ExpectedWKC, s.WKC = wkc, wkc
	h.sent++
	lossRate := 1e-5
	if h.lostSlave >= 0 {
		lossRate = 0.02
		s.WKC = wkc - 3
		s.Flags |= shm.SampleWKCMismatch
	}
	if h.rng.Float64() < lossRate {
		s.Flags |= shm.SampleLostFrame
		s.Recv = s.Send
		h.lost++
	}
	if h.dc {
		s.Flags |= shm.SampleDCValid | shm.SampleCtlValid
		s.DCDiff = int32(h.rng.NormFloat64() * 40)
		s.CtlErr = int32(h.rng.NormFloat64() * float64(p) * 0.002)
	}
}

// latency draws a wake-up latency in ns.
func (h *host) latency() int64 {
	scale := h.scale
	if h.regressed.Load() {
		scale *= 5
	}
	v := h.base + scale*math.Exp(0.6*h.rng.NormFloat64())
	if h.rng.Float64() < 1e-4 { // an SMI, a page fault: rare and long
		v += float64(h.period.Nanoseconds()) * (0.05 + 0.1*h.rng.Float64())
	}
	return int64(v)
}

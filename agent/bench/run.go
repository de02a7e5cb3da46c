package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/shm"
)

// DrainInterval is how often Run drains the sample ring, as `ecagent run`
// does.
const DrainInterval = 10 * time.Millisecond

// drainBatch is the number of samples copied out of the ring at a time.
const drainBatch = 4096

// Options configures Run.
type Options struct {
	// Program is the cycle program each block starts
	// (agent.FindCycleProgram); the zero value finds it for each block.
	Program agent.CycleProgram
	// Cycles is the number of cycles to run; at least 2.
	Cycles uint64
	// HistogramMicros is the range of the 1 µs wake-up latency histogram.
	HistogramMicros int
	// Progress receives the progress display; nil shows none. Terminal
	// selects the redrawn bar over periodic lines.
	Progress io.Writer
	Terminal bool
	// Telemetry runs, in the bench process beside the cycle, what a
	// running agent does: every sample goes through the Prometheus
	// consumer (histograms, window statistics closed every
	// metrics.window), and the registry is served on a loopback port and
	// scraped every ScrapeInterval.
	Telemetry      bool
	ScrapeInterval time.Duration
	// Cmdline and Version are recorded in the report.
	Cmdline, Version string
}

// IncompleteError says the cycle process stopped before running the
// requested cycles (it crashed or was killed); its log said why.
type IncompleteError struct {
	Ran, Requested uint64
}

func (e *IncompleteError) Error() string {
	return fmt.Sprintf("bench: the cycle process stopped after %d of %d cycles", e.Ran, e.Requested)
}

// Run benchmarks the cycle as `ecagent run` would run it with cfg: it
// starts the cycle process with agent.StartCycle for o.Cycles cycles
// (cfg.Cycle.SHM must not exist), drains its samples every DrainInterval
// while showing progress, and returns the report once the cycle process
// has exited and the ring is empty.
//
// When ctx ends first, Run stops the cycle process and returns the report
// of the cycles run so far (marked Interrupted) together with ctx's error.
// When the cycle process stops early by itself, Run returns the report of
// what ran and an *IncompleteError. A report whose samples were dropped
// from the ring (RingDrops > 0) is still a result, returned without error.
func Run(ctx context.Context, cfg config.Config, o Options, log *slog.Logger) (*Report, error) {
	if o.Cycles < 2 {
		return nil, fmt.Errorf("bench: %d cycles, want at least 2", o.Cycles)
	}
	rec, err := NewRecorder(time.Duration(cfg.Cycle.Period), o.Cycles, o.HistogramMicros)
	if err != nil {
		return nil, err
	}
	run, runErr := runBlock(ctx, cfg, o, log, rec)
	if run == nil {
		return nil, runErr
	}
	rep, err := rec.Report(*run)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	return rep, runErr
}

// runBlock runs one cycle process for o.Cycles cycles as one block of rec
// and returns what ran (nil when nothing could start), with Run's errors.
func runBlock(ctx context.Context, cfg config.Config, o Options, log *slog.Logger, rec *Recorder) (*RunInfo, error) {
	rec.StartBlock()
	var err error
	var tel *telemetry
	if o.Telemetry {
		tel, err = startTelemetry(ctx, cfg, o.ScrapeInterval, log)
		if err != nil {
			return nil, err
		}
		defer tel.stop()
	}

	prog := o.Program
	if prog.Path == "" {
		if prog, err = agent.FindCycleProgram(cfg, log); err != nil {
			return nil, err
		}
	}
	cp, err := agent.StartCycle(ctx, cfg, prog, log, o.Cycles)
	if err != nil {
		return nil, err
	}
	stopped := false
	stopCycle := func() {
		if !stopped {
			stopped = true
			cp.Stop(log, time.Duration(cfg.Bus.StateTimeout)+2*time.Second)
		}
	}
	defer stopCycle()
	if tel != nil {
		tel.reg.CycleProcessStarted(cp.PID())
	}

	info := cp.Info()
	run := RunInfo{
		Requested: o.Cycles, Start: time.Now(), Interface: cfg.Bus.Interface,
		Slaves: len(info.Slaves), Priority: cfg.Cycle.Priority, Core: cfg.Cycle.Core,
		BusyWait: time.Duration(cfg.Cycle.BusyWait), RT: info.RT, Cmdline: o.Cmdline, Version: o.Version,
	}
	var progress *Progress
	if o.Progress != nil {
		progress = NewProgress(o.Progress, o.Cycles, time.Duration(cfg.Cycle.Period), o.Terminal)
	}
	ring := cp.Segment().Samples()
	d := drainer{ring: ring, heartbeat: cp.Segment().Heartbeat(), rec: rec, buf: make([]shm.Sample, drainBatch)}
	if tel != nil {
		d.consumer = tel.reg.Consumer()
	}
	var window <-chan time.Time
	if tel != nil {
		w := time.NewTicker(cfg.Metrics.Window)
		defer w.Stop()
		window = w.C
	}
	runErr := d.follow(ctx, cp.Exited(), window, tel, progress)
	run.Interrupted = runErr != nil
	run.End = time.Now()
	run.RingDrops = ring.Drops()
	run.FramesSent, run.FramesLost = cp.Segment().Heartbeat().Frames()
	ran := ring.Pushed() + ring.Drops()
	stopCycle() // unmaps the segment: after the last use of ring
	if progress != nil {
		progress.Done()
	}
	if tel != nil {
		tel.reg.CycleProcessExited()
		run.Telemetry = tel.stop()
	}
	if runErr == nil && ran < o.Cycles {
		run.Interrupted = true
		runErr = &IncompleteError{Ran: ran, Requested: o.Cycles}
	}
	return &run, runErr
}

// follow drains the ring until the cycle process exits (exited) or ctx
// ends, closing the telemetry's windows and updating the progress on the
// way; it returns the error of an interruption.
func (d *drainer) follow(ctx context.Context, exited <-chan struct{}, window <-chan time.Time, tel *telemetry, progress *Progress) error {
	tick := time.NewTicker(DrainInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			d.drain()
			return fmt.Errorf("bench interrupted: %w", ctx.Err())
		case <-exited:
			// The producer is gone: whatever is in the ring is all there is.
			d.drain()
			return nil
		case <-window:
			tel.windows++
			d.consumer.CloseWindow()
		case now := <-tick.C:
			d.drain()
			if progress != nil {
				progress.Update(d.rec.Samples()+d.ring.Drops(), now)
			}
		}
	}
}

// drainer copies samples out of the ring into the recorder (and the
// telemetry consumer).
type drainer struct {
	ring      *shm.Ring[shm.Sample]
	heartbeat *shm.Heartbeat
	rec       *Recorder
	consumer  *metrics.Consumer
	buf       []shm.Sample
}

// drain consumes every waiting sample.
func (d *drainer) drain() {
	for {
		n := d.ring.Drain(d.buf)
		for i := range d.buf[:n] {
			d.rec.Observe(&d.buf[i])
			if d.consumer != nil {
				d.consumer.Observe(&d.buf[i])
			}
		}
		d.ring.Commit()
		if d.consumer != nil {
			d.consumer.SetSegment(cyclestats.ReadSegment(d.ring, d.heartbeat))
		}
		if n < len(d.buf) {
			return
		}
	}
}

// telemetry is the agent's telemetry reproduced in the bench process: a
// metrics registry served on a loopback port and scraped periodically.
type telemetry struct {
	reg     *metrics.Registry
	addr    string
	every   time.Duration
	cancel  context.CancelFunc
	done    sync.WaitGroup
	windows int

	mu              sync.Mutex
	scrapes, failed int
	result          *Telemetry
}

func startTelemetry(ctx context.Context, cfg config.Config, every time.Duration, log *slog.Logger) (*telemetry, error) {
	if every <= 0 {
		return nil, fmt.Errorf("bench: scrape interval %v, want > 0", every)
	}
	reg, err := metrics.NewRegistry(metrics.Options{
		Site: cfg.Site, Line: cfg.Line, Host: cfg.Host,
		Target: time.Duration(cfg.Cycle.Period), Window: cfg.Metrics.Window, CycleCore: cfg.Cycle.Core,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: telemetry: %w", err)
	}
	srv, err := metrics.NewServer(reg, metrics.ServerOptions{Listen: "127.0.0.1:0", Logger: log})
	if err != nil {
		return nil, fmt.Errorf("bench: telemetry: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &telemetry{reg: reg, addr: srv.Addr().String(), every: every, cancel: cancel}
	t.done.Add(2)
	go func() {
		defer t.done.Done()
		if err := srv.Run(ctx); err != nil {
			log.Warn("bench: metrics endpoint", "err", err)
		}
	}()
	go func() {
		defer t.done.Done()
		t.scrapeLoop(ctx)
	}()
	return t, nil
}

// scrapeLoop fetches /metrics every t.every, as Prometheus would.
func (t *telemetry) scrapeLoop(ctx context.Context) {
	client := &http.Client{Timeout: 10 * time.Second}
	url := "http://" + t.addr + "/metrics"
	tick := time.NewTicker(t.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		err := scrape(ctx, client, url)
		if ctx.Err() != nil {
			return // cut short by the end of the run: not a scrape
		}
		t.mu.Lock()
		t.scrapes++
		if err != nil {
			t.failed++
		}
		t.mu.Unlock()
	}
}

func scrape(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("scrape: %s", resp.Status)
	}
	return nil
}

// stop shuts the endpoint and the scraper down (once) and returns what
// they did.
func (t *telemetry) stop() *Telemetry {
	if t.result != nil {
		return t.result
	}
	t.cancel()
	t.done.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.result = &Telemetry{Address: t.addr, ScrapeInterval: t.every, Scrapes: t.scrapes, ScrapeErrors: t.failed, Windows: t.windows}
	return t.result
}

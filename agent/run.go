package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/esinames"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// Back-off of the attempts to have a cycle process running: after one
// died or failed to bring the bus up, the next attempt starts restartMin
// later, and each failure in a row doubles the wait up to restartMax. A
// bus that appears (powered, plugged in) is so in cyclic operation within
// restartMax and a bring-up.
const (
	restartMin = 100 * time.Millisecond
	restartMax = 10 * time.Second
)

// Run is `ecagent run`: it starts the cycle process (or attaches to one
// that survived an earlier agent), then consumes what the cycle writes to
// shared memory — samples, events — and reports it, until ctx ends. It
// never gives up on its bus: a cycle process that fails to bring the bus
// up (the segment absent, not answering, not as configured) or dies is
// started again, with back-off, without end, and every output says
// meanwhile that the bus is not ready and why. Only an error of the
// agent's own at the first attempt (the segment's place, the cycle
// program) ends it. On the way out it stops the cycle process, which
// takes the bus to INIT. An agent killed without that chance leaves the
// cycle running; the next agent attaches to it.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, status io.Writer, build Build) error {
	prog, err := FindCycleProgram(cfg, log)
	if err != nil {
		return err
	}
	if err := makeDefaultSHMDir(filepath.Dir(cfg.Cycle.SHM), contract.DefaultSHMDir); err != nil {
		return fmt.Errorf("cycle.shm %s: %w", cfg.Cycle.SHM, err)
	}
	lock, err := lockSegment(cfg.Cycle.SHM) // one agent a segment, before anything is served
	if err != nil {
		return err
	}
	defer lock.Close()
	tel, err := newTelemetry(cfg, build)
	if err != nil {
		return err
	}
	fo := startForensics(ctx, cfg, log, tel) // late cycles explained (agent/forensics.go)
	defer fo.close()
	tel.forensics = fo
	if err := tel.serve(ctx, cfg, build, log); err != nil {
		return err
	}
	go tel.runRTChecks(ctx, cfg, log)
	ot, err := startOTLP(ctx, cfg, build, log) // OpenTelemetry export (agent/otlp.go)
	if err != nil {
		return err
	}
	defer ot.stop()

	mq, err := startMQTT(cfg, log, tel.reg) // the MQTT publisher (agent/mqtt.go)
	if err != nil {
		return err
	}
	c := newConsumer(cfg, log, tel)
	c.mqtt, c.otlp, c.forensics = mq, ot, fo
	tel.setBusModel(c.model)        // every scrape shows the bus as the model does
	mq.setBusModel(c.model)         // every message shows the bus as the model does
	sd := newServiceNotifier(log)   // systemd Type=notify (agent/systemd.go)
	names := loadESINames(cfg, log) // PDO entry names, units and types from bus.esi (agent/esi.go)
	sup := &cycleSupervisor{cfg: cfg, prog: prog, log: log, c: c, sd: sd, status: status, backoff: restartMin, names: names}
	if err := sup.begin(); err != nil {
		mq.stop()
		sd.close()
		return err
	}
	defer sd.close()
	defer sup.stop(time.Duration(cfg.Bus.StateTimeout) + 2*time.Second)
	defer sd.stopping() // deferred calls run last first: before the cycle stops
	defer mq.stop()     // before the cycle stops: it reads the cycle's memory
	return c.loop(ctx, cfg, sup, sd, status, log)
}

// loop is the agent's life once the cycle's supervisor has begun: it
// drains the cycle's rings, closes the statistics windows, writes the
// status lines and lets the supervisor start, watch and restart the cycle
// process, until ctx ends.
func (c *consumer) loop(ctx context.Context, cfg config.Config, sup *cycleSupervisor, sd *serviceNotifier, status io.Writer, log *slog.Logger) error {
	window := time.NewTicker(cfg.Metrics.Window)
	defer window.Stop()

	drain := time.NewTicker(10 * time.Millisecond)
	defer drain.Stop()
	var statusC <-chan time.Time
	var statusTick *time.Ticker
	if cfg.Status.Interval > 0 {
		statusTick = time.NewTicker(cfg.Status.Interval)
		defer statusTick.Stop()
		statusC = statusTick.C
	}
	for {
		select {
		case <-ctx.Done():
			c.finish(status, log, time.Duration(cfg.Bus.StateTimeout)+2*time.Second)
			return nil
		case <-statusC:
			// While no cycle runs, a line per failed bring-up (failed):
			// there are no cycles to report.
			if c.cp != nil {
				c.writeStatus(status)
			}
		case <-window.C:
			if c.cp == nil {
				continue // no cycles, no window: the first starts with the cycle
			}
			report := c.tel.reg.Consumer().CloseWindow()
			c.mqtt.window(report)
			c.otlp.window(report)
		case <-drain.C:
			if c.cp != nil {
				c.drain()
				if c.cp.alive() {
					c.watchHeartbeat()
					sd.feedWatchdog(c.cp)
					continue
				}
				sup.died()
			}
			sup.step()
			if c.cp != nil {
				// A cycle process runs from now: its first window is a
				// whole one, and its first status line an interval on.
				window.Reset(cfg.Metrics.Window)
				if statusTick != nil {
					statusTick.Reset(cfg.Status.Interval)
				}
			}
		}
	}
}

// finish ends a run: it writes the last status line and, with a cycle
// process, stops it first (within stopWithin) and takes everything it
// wrote, as the accounting is exact only over the whole run.
func (c *consumer) finish(status io.Writer, log *slog.Logger, stopWithin time.Duration) {
	if c.cp == nil {
		c.writeStatus(status)
		return
	}
	c.drain()
	c.writeStatus(status) // the last line shows the bus as it ran
	c.cp.halt(log, stopWithin)
	c.drain()
	c.account()
}

// cycleSupervisor keeps a cycle process running for the agent: it starts
// one (or attaches to one that survived the last agent), follows its
// bring-up without holding up the agent's loop, and when bring-up fails
// or the process dies, starts another after a back-off, without end.
// Each step is told to every output through the bus model, the metrics,
// MQTT, systemd and the log. It runs on the agent's loop.
type cycleSupervisor struct {
	cfg config.Config
	// prog is the cycle program, found once (FindCycleProgram).
	prog CycleProgram
	log  *slog.Logger
	c    *consumer
	sd   *serviceNotifier
	// status receives the status line of each failed bring-up.
	status io.Writer
	// starting is a cycle process bringing the bus up.
	starting *CycleProcess
	// retryAt is when, with no cycle process, the next attempt starts;
	// backoff is the wait after the next failure, failures the
	// failures in a row.
	retryAt  time.Time
	backoff  time.Duration
	failures int
	// restarting is set once a cycle process died: the next to run is
	// a restart.
	restarting bool
	// names are the ESI descriptions of bus.esi, nil without any.
	names *esinames.Catalog
}

// begin makes the first attempt. An error starting the cycle process is
// the agent's own (the segment's place, the cycle program: nothing
// another attempt would change) and is returned; a failed bring-up comes
// later (step) and is tried again.
func (s *cycleSupervisor) begin() error { return s.launch() }

// launch attaches to a running cycle process or starts one.
func (s *cycleSupervisor) launch() error {
	cp, attached, err := attachOrLaunch(s.cfg, s.prog, s.log)
	if err != nil {
		return err
	}
	if attached {
		s.running(cp)
		return nil
	}
	s.starting = cp
	s.c.model.BringingUp()
	s.c.updateReady()
	s.c.mqtt.stateChanged()
	s.sd.bringingUp()
	return nil
}

// step follows a cycle process bringing the bus up, and starts the next
// attempt when none runs and its time has come.
func (s *cycleSupervisor) step() {
	if cp := s.starting; cp != nil {
		done, err := cp.poll()
		switch {
		case err != nil:
			s.starting = nil
			cp.stop(s.log, time.Second)
			s.failed(err)
		case done:
			s.starting = nil
			s.running(cp)
		default:
			s.sd.feedWhileBringingUp()
		}
		return
	}
	if s.c.cp == nil {
		if !time.Now().Before(s.retryAt) {
			if err := s.launch(); err != nil {
				s.failed(err)
			}
		} else {
			s.sd.feedWhileBringingUp()
		}
	}
}

// running takes up a cycle process in cyclic operation.
func (s *cycleSupervisor) running(cp *CycleProcess) {
	annotate(s.names, cp.Info(), s.log)
	s.c.attach(cp)
	s.c.mqtt.attach(cp)
	s.sd.cycleRunning(cp)
	if s.failures > 0 {
		s.log.Info("the bus is up after failed bring-ups", "failures", s.failures, "pid", cp.pid)
	}
	if s.restarting {
		s.c.tel.agentEvent(s.log, contract.EventCycleRestarted, "pid", cp.pid, "restarts", s.c.restarts)
	}
	s.restarting, s.failures, s.backoff = false, 0, restartMin
}

// failed reports a failed attempt and schedules the next.
func (s *cycleSupervisor) failed(err error) {
	s.failures++
	reason, text := busstate.BringUpFailed, err.Error()
	var bu *BringUpError
	if errors.As(err, &bu) {
		reason, text = bu.Reason, bu.Detail
	}
	wait := s.backoff
	s.retryAt = time.Now().Add(wait)
	s.backoff = min(2*s.backoff, restartMax)
	s.c.model.BringUpFailed(reason, text)
	s.c.updateReady()
	s.c.mqtt.bringUpFailed(reason, text, s.failures, wait)
	s.c.writeStatus(s.status)
	s.sd.bringUpFailed(fmt.Sprintf("bring-up failed %d time(s) in a row (%s): %s; trying again in %v", s.failures, reason, text, wait))
	s.c.tel.agentEvent(s.log, contract.EventBringUpFailed, "reason", reason.String(), "err", text,
		"failures", s.failures, "next_try_in", wait)
}

// died reports that the running cycle process died and schedules its
// restart.
func (s *cycleSupervisor) died() {
	c := s.c
	c.restarts++
	c.tel.reg.CycleProcessExited()
	c.model.CycleDown()
	c.updateReady()
	s.sd.cycleDown("the cycle process died; restarting it")
	c.tel.agentEvent(s.log, contract.EventCycleDied, "pid", c.cp.pid, "restarts", c.restarts, "after", s.backoff)
	c.mqtt.detach("the cycle process died")
	c.cp.stop(s.log, time.Second)
	c.cp = nil
	s.restarting = true
	s.retryAt = time.Now().Add(s.backoff)
	s.backoff = min(2*s.backoff, restartMax)
}

// stop stops the cycle process, running or bringing the bus up.
func (s *cycleSupervisor) stop(grace time.Duration) {
	if s.starting != nil {
		s.starting.stop(s.log, grace)
		s.starting = nil
	}
	if s.c.cp != nil {
		s.c.cp.stop(s.log, grace)
	}
}

// consumer drains the segment in the agent process and keeps the figures
// the status line (and the exporters) report.
type consumer struct {
	tel       *telemetry
	mqtt      *mqttBridge
	otlp      *otlpExport
	forensics *forensics
	cfg       config.Config
	// cp is the cycle process in cyclic operation; nil while none is.
	cp       *CycleProcess
	log      *slog.Logger
	buf      []shm.Sample
	restarts int
	// runSamples counts the samples received from the current cycle
	// process, for the accounting at the end (account).
	runSamples uint64

	cycles, lost, wkcErrors, overruns, skipped uint64
	// acyclicCycles counts the cycles that carried acyclic datagrams,
	// acyclicOverruns the overruns among them.
	acyclicCycles, acyclicOverruns uint64
	lastWKC, expectedWKC           uint16
	maxWake, maxJob, maxJitter     int64
	prevWake                       int64
	prevCycle                      uint64
	havePrev                       bool
	// model is the one state of the bus and its slaves that every
	// output renders: /readyz and the status line here, the metrics and
	// MQTT through the registry and the publisher.
	model *busstate.Model
}

// newConsumer returns a consumer with no cycle process yet (attach).
func newConsumer(cfg config.Config, log *slog.Logger, tel *telemetry) *consumer {
	return &consumer{cfg: cfg, log: log, tel: tel, buf: make([]shm.Sample, 1024), model: busstate.New(nil)}
}

// attach switches to a (new) cycle process. Samples written before this
// agent attached are consumed like any others: the ring keeps them.
func (c *consumer) attach(cp *CycleProcess) {
	c.cp = cp
	c.runSamples = 0
	c.havePrev = false
	slaves := make([]busstate.SlaveInfo, len(cp.info.Slaves))
	for i, s := range cp.info.Slaves {
		slaves[i] = busstate.SlaveInfo{Position: s.Position, Name: slaveLabel(s)}
	}
	c.model.Reset(slaves) // the cycle process brought every slave to OP
	c.expectedWKC = cp.info.ExpectedWKC
	c.tel.cycleStarted(cp, cp.cmd == nil)
	if m := cp.info.Maintenance; m.Error != "" {
		c.log.Error("the cycle process refused to serve its maintenance socket: the cycle runs on, maintenance commands "+
			"(ecagent slaves, reg, states …) are refused until it is fixed", "socket", m.Socket, "err", m.Error)
	}
	c.otlp.restart()
	if c.forensics != nil {
		c.forensics.attach(cp)
	}
	c.updateReady()
}

// drain consumes every waiting sample and event.
func (c *consumer) drain() {
	ring := c.cp.seg.Samples()
	for {
		n := ring.Drain(c.buf)
		mc := c.tel.reg.Consumer()
		for i := range c.buf[:n] {
			c.observe(&c.buf[i])
			mc.Observe(&c.buf[i])
			c.otlp.observe(&c.buf[i])
			if c.forensics != nil {
				c.forensics.observe(&c.buf[i])
			}
		}
		ring.Commit()
		if n < len(c.buf) {
			break
		}
	}
	totals := cyclestats.ReadSegment(ring, c.cp.seg.Heartbeat())
	c.tel.reg.Consumer().SetSegment(totals)
	c.otlp.segment(totals)
	var ev shm.Event
	events := c.cp.seg.Events()
	for events.Next(&ev) {
		c.event(&ev)
	}
	events.Commit()
	if c.forensics != nil {
		c.forensics.deliver(c.tel, c.mqtt)
	}
}

// account checks, when the cycle process has stopped and its ring is
// drained, that every cycle it ran is accounted for: received as a sample
// or counted as a ring drop. It logs the figures, at error level if they
// disagree. Only a cycle process this agent started is accounted: one it
// attached to ran cycles an earlier agent received.
func (c *consumer) account() {
	cycle, _, ok := c.cp.seg.Heartbeat().Read()
	if !ok || c.cp.cmd == nil {
		return
	}
	run, drops := cycle+1, c.cp.seg.Samples().Drops()
	if c.runSamples+drops == run {
		c.log.Info("accounting: every cycle accounted for", "cycles_run", run, "samples", c.runSamples, "ring_drops", drops)
		return
	}
	c.log.Error("accounting: cycles missing", "cycles_run", run, "samples", c.runSamples, "ring_drops", drops,
		"missing", int64(run)-int64(c.runSamples+drops))
}

func (c *consumer) observe(s *shm.Sample) {
	c.runSamples++
	c.cycles++
	c.lastWKC, c.expectedWKC = s.WKC, s.ExpectedWKC
	if s.Flags&shm.SampleLostFrame != 0 {
		c.lost++
	} else if s.Flags&shm.SampleWKCMismatch != 0 {
		c.wkcErrors++
	}
	if s.Flags&shm.SampleOverrun != 0 {
		c.overruns++
	}
	if s.Flags&shm.SampleAcyclic != 0 {
		c.acyclicCycles++
		if s.Flags&shm.SampleOverrun != 0 {
			c.acyclicOverruns++
		}
	}
	c.skipped += uint64(s.Skipped)
	c.maxWake = max(c.maxWake, s.Wake-s.Deadline)
	c.maxJob = max(c.maxJob, s.End-s.Wake)
	if c.havePrev && s.Cycle == c.prevCycle+1 {
		j := s.Wake - c.prevWake - int64(c.cfg.Cycle.Period)
		c.maxJitter = max(c.maxJitter, j, -j)
	}
	c.prevWake, c.prevCycle, c.havePrev = s.Wake, s.Cycle, true
}

// event takes one event of the cycle process to every output, each as
// the kind's row of the event catalogue (package contract) says: the bus
// model first (the others render the model after it), MQTT, the metrics,
// the log. A kind without a row, or the agent's own, is not the cycle's
// to report: it is logged and dropped.
func (c *consumer) event(ev *shm.Event) {
	e, ok := ev.Kind.Info()
	if !ok || e.Origin != contract.OriginCycle {
		c.log.Warn("event of a kind the cycle process does not report: dropped", "kind", ev.Kind.String(), "cycle", ev.Cycle)
		return
	}
	c.model.Apply(ev)
	c.mqtt.event(ev)
	c.tel.event(c.cp, ev, e, c.otlp)
	c.logEvent(ev, e)
	c.updateReady()
}

// logEvent writes the log line of ev, of row e, if the row has one: its
// name and cycle; for an event about one slave, the slave and, when the
// event changes it, its condition in the model; for one that changes the
// bus, the bus's summary; then the fields every output shows.
func (c *consumer) logEvent(ev *shm.Event, e contract.EventInfo) {
	if e.Log == "" {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs, slog.String("event", e.Name), slog.Uint64("cycle", ev.Cycle))
	switch {
	case e.PerSlave:
		slave, _ := c.model.Slave(int(ev.Slave))
		attrs = append(attrs, slog.String("slave", slave.Label()))
		if e.Effect != contract.EffectNone {
			attrs = append(attrs, slog.String("condition", slave.Condition()))
		}
	case e.Effect != contract.EffectNone:
		bus := c.model.Snapshot()
		attrs = append(attrs, slog.String("bus", bus.Summary()))
	}
	var fields [6]busstate.EventField
	for _, f := range busstate.AppendEventFields(fields[:0], ev, e) {
		attrs = append(attrs, f.Attr())
	}
	c.log.LogAttrs(context.Background(), e.Level, e.Log, attrs...)
}

// stallAfter is how long the cycle's heartbeat may stand still before the
// bus model says the cycle process is not responding: 50 cycles, at least
// 100 ms, so that a loaded host delaying the agent's own reads is no stall
// (the heartbeat's time is the cycle's, not the reader's).
func stallAfter(period time.Duration) time.Duration { return max(50*period, 100*time.Millisecond) }

// watchHeartbeat tells the model whether the cycle process still beats: a
// process that exists but runs no cycles (stopped, hung, starved) leaves
// the image as it was, and its data must not be shown as fresh.
func (c *consumer) watchHeartbeat() {
	_, mono, ok := c.cp.seg.Heartbeat().Read()
	stalled := ok && shm.Now()-mono > int64(stallAfter(time.Duration(c.cfg.Cycle.Period)))
	if c.model.SetCycleStalled(stalled) {
		c.tel.reg.CycleProcessResponding(!stalled)
		if stalled {
			c.log.Error("cycle process not responding: its heartbeat stopped", "pid", c.cp.pid, "after", stallAfter(time.Duration(c.cfg.Cycle.Period)))
		} else {
			c.log.Info("cycle process responding again", "pid", c.cp.pid)
		}
		c.updateReady()
	}
}

// updateReady sets /readyz from the model: ready when the cycle runs, the
// link is up, every slave answers in OP without an error and no bus alarm
// is raised; otherwise the model's reason, in the words every output uses.
func (c *consumer) updateReady() {
	if ok, why := c.model.Ready(); !ok {
		c.tel.notReady(why)
		return
	}
	c.tel.setReady()
}

// writeStatus prints one status line and starts a new interval for the
// worst-case figures.
func (c *consumer) writeStatus(w io.Writer) {
	bus := c.model.Snapshot()
	state := bus.Summary()
	if c.cp != nil && !c.cp.alive() {
		state = "CYCLE-DOWN"
	}
	fmt.Fprintf(w, "%s %s  slaves %d  cycles %d  period %v  wkc %d/%d  lost %d  wkc-errors %d  overruns %d (acyclic %d of %d)  wake-max %v  jitter-max %v  job-max %v  restarts %d\n",
		time.Now().Format("15:04:05"), state, len(bus.Slaves), c.cycles, time.Duration(c.cfg.Cycle.Period),
		c.lastWKC, c.expectedWKC, c.lost, c.wkcErrors, c.overruns, c.acyclicOverruns, c.acyclicCycles,
		us(c.maxWake), us(c.maxJitter), us(c.maxJob), c.restarts)
	c.maxWake, c.maxJob, c.maxJitter = 0, 0, 0
}

func us(ns int64) time.Duration { return time.Duration(ns).Round(time.Microsecond) }

package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/mqtt"
	"github.com/ecagent/ecagent/shm"
)

// Restart back-off of a cycle process that died.
const (
	restartMin = 100 * time.Millisecond
	restartMax = 30 * time.Second
)

// Run is `ecagent run`: it starts the cycle process (or attaches to one
// that survived an earlier agent), then consumes what the cycle writes to
// shared memory — samples, events — and reports it, until ctx ends. A
// cycle process that dies is restarted with back-off and the restart
// reported. On the way out it stops the cycle process, which takes the bus
// to INIT. An agent killed without that chance leaves the cycle running;
// the next agent attaches to it.
func Run(ctx context.Context, cfg config.Config, log *slog.Logger, status io.Writer, build Build) error {
	tel, err := newTelemetry(cfg, build)
	if err != nil {
		return err
	}
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
	cp, err := attachOrStart(ctx, cfg, log)
	if err != nil {
		mq.stop()
		return err
	}
	c := newConsumer(cfg, cp, log, tel)
	defer func() { c.cp.stop(log, cfg.Bus.StateTimeout+2*time.Second) }()
	sd := newServiceNotifier(log) // systemd Type=notify (agent/systemd.go)
	defer sd.close()
	defer sd.stopping() // deferred calls run last first: before the cycle stops
	sd.cycleRunning(cp)
	defer mq.stop() // before the cycle stops: it reads the cycle's memory
	c.mqtt = mq
	c.otlp = ot
	mq.attach(cp)
	window := time.NewTicker(cfg.Metrics.Window)
	defer window.Stop()

	drain := time.NewTicker(10 * time.Millisecond)
	defer drain.Stop()
	var statusC <-chan time.Time
	if cfg.Status.Interval > 0 {
		t := time.NewTicker(cfg.Status.Interval)
		defer t.Stop()
		statusC = t.C
	}
	backoff := restartMin
	for {
		select {
		case <-ctx.Done():
			// Stop the cycle first, then take everything it wrote: the
			// accounting below is exact only over the whole run.
			c.drain()
			c.writeStatus(status) // the last line shows the bus as it ran
			c.cp.halt(log, cfg.Bus.StateTimeout+2*time.Second)
			c.drain()
			c.account()
			return nil
		case <-statusC:
			c.writeStatus(status)
		case <-window.C:
			report := c.tel.reg.Consumer().CloseWindow()
			c.mqtt.window(report)
			c.otlp.window(report)
		case <-drain.C:
			c.drain()
			if c.cp.alive() {
				sd.feedWatchdog(c.cp)
				continue
			}
			c.restarts++
			tel.reg.CycleProcessExited()
			tel.reg.CountEvent("cycle-died", -1, "")
			tel.notReady("the cycle process died")
			sd.cycleDown("the cycle process died; restarting it")
			log.Error("the cycle process died; restarting it", "pid", c.cp.pid, "restarts", c.restarts, "after", backoff)
			c.mqtt.detach("the cycle process died")
			c.cp.stop(log, time.Second)
			// Retry until a cycle runs again: until then nothing is drained,
			// since the old segment is closed.
			var cp *CycleProcess
			for cp == nil {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, restartMax)
				var err error
				cp, err = attachOrStart(ctx, cfg, log)
				if err != nil {
					if ctx.Err() != nil {
						return nil
					}
					var bm *BusMismatchError
					if errors.As(err, &bm) {
						return err
					}
					log.Error("restarting the cycle process failed", "err", err, "next_try_in", backoff)
				}
			}
			c.attach(cp)
			c.mqtt.attach(cp)
			sd.cycleRunning(cp)
			tel.reg.CountEvent("cycle-restarted", -1, "")
			log.Info("cycle process restarted", "pid", cp.pid, "restarts", c.restarts)
			backoff = restartMin
		}
	}
}

// consumer drains the segment in the agent process and keeps the figures
// the status line (and the exporters) report.
type consumer struct {
	tel      *telemetry
	mqtt     *mqttBridge
	otlp     *otlpExport
	cfg      config.Config
	cp       *CycleProcess
	log      *slog.Logger
	buf      []shm.Sample
	restarts int
	// runSamples counts the samples received from the current cycle
	// process, for the accounting at the end (account).
	runSamples uint64

	cycles, lost, wkcErrors, overruns, skipped uint64
	lastWKC, expectedWKC                       uint16
	maxWake, maxJob, maxJitter                 int64
	prevWake                                   int64
	prevCycle                                  uint64
	havePrev                                   bool
	busState                                   esc.ALStatus
	missing                                    map[uint16]bool // slaves lost and not back
	alarm, linkDown                            bool
}

func newConsumer(cfg config.Config, cp *CycleProcess, log *slog.Logger, tel *telemetry) *consumer {
	c := &consumer{cfg: cfg, log: log, tel: tel, buf: make([]shm.Sample, 1024)}
	c.attach(cp)
	return c
}

// attach switches to a (new) cycle process. Samples written before this
// agent attached are consumed like any others: the ring keeps them.
func (c *consumer) attach(cp *CycleProcess) {
	c.cp = cp
	c.runSamples = 0
	c.havePrev = false
	c.busState = esc.ALStatus{State: esc.StateOp}
	c.missing = map[uint16]bool{}
	c.alarm, c.linkDown = false, false
	c.expectedWKC = cp.info.ExpectedWKC
	c.tel.cycleStarted(cp, cp.cmd == nil)
	c.otlp.restart()
	c.tel.setReady()
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
		}
		ring.Commit()
		if n < len(c.buf) {
			break
		}
	}
	c.tel.reg.Consumer().SetRingDrops(ring.Drops())
	c.otlp.ringDrops(ring.Drops())
	var ev shm.Event
	events := c.cp.seg.Events()
	for events.Next(&ev) {
		c.event(&ev)
	}
	events.Commit()
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
	c.skipped += uint64(s.Skipped)
	c.maxWake = max(c.maxWake, s.Wake-s.Deadline)
	c.maxJob = max(c.maxJob, s.End-s.Wake)
	if c.havePrev && s.Cycle == c.prevCycle+1 {
		j := s.Wake - c.prevWake - int64(c.cfg.Cycle.Period)
		c.maxJitter = max(c.maxJitter, j, -j)
	}
	c.prevWake, c.prevCycle, c.havePrev = s.Wake, s.Cycle, true
}

func (c *consumer) event(ev *shm.Event) {
	c.mqtt.event(ev)
	var b [2]byte
	b[0], b[1] = byte(ev.ALState), byte(ev.ALState>>8)
	st := esc.DecodeALStatus(b[:])
	c.tel.countEvent(c.cp, ev)
	switch ev.Kind {
	case shm.EventStateChange, shm.EventALError:
		c.busState = st
		c.tel.busState(c.cp, uint8(st.State), ev.ALStatusCode)
		c.log.Warn("bus state changed", "state", st.String(), "cycle", ev.Cycle)
	case shm.EventSlaveLost:
		c.missing[ev.Slave] = true
		c.log.Warn("slave lost", "slave", ev.Slave, "cycle", ev.Cycle, "note", ev.TextString())
	case shm.EventSlaveFound, shm.EventSlaveReconnected:
		delete(c.missing, ev.Slave)
		c.log.Info("slave back in OP", "slave", ev.Slave, "cycle", ev.Cycle, "how", ev.Kind.String(),
			"took", time.Duration(ev.Value).String())
	case shm.EventSlaveRefused:
		c.log.Error("another device at a slave's position: not configured", "slave", ev.Slave, "found", ev.TextString())
	case shm.EventALAcknowledged:
		c.log.Info("slave AL error acknowledged, back in OP", "slave", ev.Slave, "al_status_code", fmt.Sprintf("%#04x", ev.ALStatusCode))
	case shm.EventRecoveryFailed:
		c.log.Warn("slave refuses to return to OP", "slave", ev.Slave, "attempts", ev.Value,
			"al_status_code", fmt.Sprintf("%#04x", ev.ALStatusCode), "note", ev.TextString())
	case shm.EventBusAlarm:
		c.alarm = true
		c.log.Error("bus alarm", "why", ev.TextString(), "cycles", ev.Value)
	case shm.EventBusAlarmCleared:
		c.alarm = false
		c.log.Info("bus alarm cleared", "clean_cycles", ev.Value)
	case shm.EventLinkDown:
		c.linkDown = true
		c.log.Error("link down: cyclic frames cannot be sent", "cycle", ev.Cycle)
	case shm.EventLinkUp:
		c.linkDown = false
		c.log.Info("link up", "cycle", ev.Cycle)
	case shm.EventCycleStarted:
		c.log.Info("cycle started", "pid", c.cp.pid)
	case shm.EventNote:
		c.log.Info("cycle process", "note", ev.TextString())
	case shm.EventCommandRejected:
		c.log.Warn("command rejected", "seq", ev.Value, "slave", ev.Slave, "reason", ev.TextString())
	case shm.EventEmergency:
		c.tel.slaveEvent(c.cp, ev, c.otlp)
		code, reg, data := ev.Emergency()
		c.log.Warn("CoE emergency", "slave", ev.Slave, "error_code", fmt.Sprintf("%#04x", code),
			"meaning", mqtt.EmergencyMeaning(code), "error_register", fmt.Sprintf("%#02x", reg), "data", fmt.Sprintf("% x", data[:]))
	case shm.EventDriveState:
		c.tel.slaveEvent(c.cp, ev, c.otlp)
		c.log.Info("drive state", "slave", ev.Slave, "state", ev.TextString())
	case shm.EventDriveFault:
		c.tel.slaveEvent(c.cp, ev, c.otlp)
		c.log.Error("drive fault", "slave", ev.Slave, "error_code", fmt.Sprintf("%#04x", ev.Value),
			"meaning", mqtt.EmergencyMeaning(uint16(ev.Value)), "state", ev.TextString())
	case shm.EventDriveFaultCleared:
		c.tel.slaveEvent(c.cp, ev, c.otlp)
		c.log.Info("drive fault cleared", "slave", ev.Slave, "state", ev.TextString())
	}
	c.updateReady()
}

// updateReady sets /readyz from the bus state: every slave in OP without
// an error and answering, no bus alarm, the link up.
func (c *consumer) updateReady() {
	switch {
	case c.linkDown:
		c.tel.notReady("link down")
	case len(c.missing) > 0:
		c.tel.notReady(fmt.Sprintf("%d slave(s) not answering", len(c.missing)))
	case c.busState.State != esc.StateOp || c.busState.Error:
		c.tel.notReady("bus in " + c.busState.String())
	case c.alarm:
		c.tel.notReady("bus alarm: frames lost or working counter off")
	default:
		c.tel.setReady()
	}
}

// writeStatus prints one status line and starts a new interval for the
// worst-case figures.
func (c *consumer) writeStatus(w io.Writer) {
	state := c.busState.String()
	if !c.busState.State.Valid() {
		state = fmt.Sprintf("MIXED(%#02x)", uint8(c.busState.State))
	}
	if len(c.missing) > 0 {
		state += " (slave missing)"
	}
	if !c.cp.alive() {
		state = "CYCLE-DOWN"
	}
	fmt.Fprintf(w, "%s %s  slaves %d  cycles %d  period %v  wkc %d/%d  lost %d  wkc-errors %d  overruns %d  wake-max %v  jitter-max %v  job-max %v  restarts %d\n",
		time.Now().Format("15:04:05"), state, len(c.cp.info.Slaves), c.cycles, c.cfg.Cycle.Period,
		c.lastWKC, c.expectedWKC, c.lost, c.wkcErrors, c.overruns,
		us(c.maxWake), us(c.maxJitter), us(c.maxJob), c.restarts)
	c.maxWake, c.maxJob, c.maxJitter = 0, 0, 0
}

func us(ns int64) time.Duration { return time.Duration(ns).Round(time.Microsecond) }

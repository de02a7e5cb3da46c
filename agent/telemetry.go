package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/agent/rtcheck"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// Build identifies the binary for ecagent_build_info.
type Build struct{ Version, Revision string }

// rtcheckInterval is how often the host doctor runs while the agent does,
// so that a host silently losing a setting raises an alert.
const rtcheckInterval = time.Minute

// telemetry is the agent's export side: the Prometheus registry fed by the
// consumer, the metrics endpoint, and the readiness the endpoint reports.
type telemetry struct {
	reg   *metrics.Registry
	ready atomic.Pointer[string] // nil when ready, else why not
}

func newTelemetry(cfg config.Config, b Build) (*telemetry, error) {
	reg, err := metrics.NewRegistry(metrics.Options{
		Site: cfg.Site, Line: cfg.Line, Host: cfg.Host,
		Target: time.Duration(cfg.Cycle.Period), Window: cfg.Metrics.Window, Detail: metrics.Detail(cfg.Metrics.Detail),
		ProcRoot: "/proc", CycleCore: cfg.Cycle.Core,
		Version: b.Version, Revision: b.Revision,
	})
	if err != nil {
		return nil, err
	}
	t := &telemetry{reg: reg}
	t.notReady("starting")
	return t, nil
}

func (t *telemetry) notReady(why string) { t.ready.Store(&why) }
func (t *telemetry) setReady()           { t.ready.Store(nil) }

// readiness is /readyz: the bus in OP and the cycle running.
func (t *telemetry) readiness() error {
	if why := t.ready.Load(); why != nil {
		return errors.New(*why)
	}
	return nil
}

// serve runs the metrics endpoint until ctx ends; an empty metrics.listen
// disables it.
func (t *telemetry) serve(ctx context.Context, cfg config.Config, b Build, log *slog.Logger) error {
	if cfg.Metrics.Listen == "" {
		return nil
	}
	srv, err := metrics.NewServer(t.reg, metrics.ServerOptions{
		Listen: cfg.Metrics.Listen, WebConfigFile: cfg.Metrics.WebConfig,
		Ready: t.readiness, Version: b.Version, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("metrics endpoint: %w", err)
	}
	log.Info("metrics endpoint", "addr", srv.Addr().String(), "tls_and_auth", cfg.Metrics.WebConfig != "")
	go func() {
		if err := srv.Run(ctx); err != nil {
			log.Error("metrics endpoint stopped", "err", err)
		}
	}()
	return nil
}

// cycleStarted records a (new) cycle process and its bus.
func (t *telemetry) cycleStarted(cp *CycleProcess, attached bool) {
	if attached {
		t.reg.CycleProcessAttached(cp.pid)
	} else {
		t.reg.CycleProcessStarted(cp.pid)
	}
	t.reg.Consumer().Restart()
	if attached {
		t.reg.Consumer().Attached()
	}
	var slaves []metrics.Slave
	for _, s := range cp.info.Slaves {
		slaves = append(slaves, metrics.Slave{Position: s.Position, Name: slaveLabel(s)})
	}
	t.reg.SetSlaves(slaves) // the count and the error counters; the states are the model's
	dc := metrics.DCSettings{ReferencePosition: -1}
	if d := cp.info.DC; d != nil {
		dc = metrics.DCSettings{Enabled: true, ReferencePosition: d.ReferencePosition, Sync0Cycle: d.Sync0,
			Sync0Shift: d.Sync0Shift, Sync1Shift: d.Sync1}
	}
	t.reg.SetDC(dc)
	for _, r := range cp.info.RT {
		if r.Requested {
			t.reg.SetRTSetting(metrics.RTSetting(r.Setting), r.Applied)
		}
	}
	if m := cp.info.Maintenance; m.Socket != "" {
		t.reg.SetMaintenanceSocket(m.Socket, m.Error == "")
	}
}

// setBusModel hands the agent's bus model to the registry: every scrape
// renders the slave state series (ecagent_slave_up, _al_state,
// _presence, _data_quality, …) from it, so the metrics say of each slave
// what /readyz, MQTT and the log say.
func (t *telemetry) setBusModel(m *busstate.Model) { t.reg.SetBusModel(m) }

// event records an event of the cycle process, of row e of the event
// catalogue, in the metrics: ecagent_bus_events_total by kind and slave
// (-1 for the bus as a whole) when the row counts it, the row's own
// counter family, and the device series it sets (also in OTLP).
func (t *telemetry) event(cp *CycleProcess, ev *shm.Event, e contract.EventInfo, ot *otlpExport) {
	pos, name := -1, ""
	if e.PerSlave {
		pos, name = int(ev.Slave), cp.slaveName(int(ev.Slave))
	}
	if e.Counted {
		t.reg.CountEvent(e.Name, pos, name)
	}
	if e.Counter.Stem != "" {
		t.reg.AddEventValue(e.Kind, ev.TextString(), ev.Value)
	}
	t.deviceEvent(e.Device, pos, name, ev, ot)
}

// agentEvent reports one of the agent's own events (kind k: a cycle
// process died, restarted, failed to bring the bus up) as its row of the
// event catalogue says: counted for the bus as a whole, and logged at the
// row's level with its message and args.
func (t *telemetry) agentEvent(log *slog.Logger, k contract.EventKind, args ...any) {
	e, _ := k.Info()
	if e.Counted {
		t.reg.CountEvent(e.Name, -1, "")
	}
	if e.Log != "" {
		log.Log(context.Background(), e.Level, e.Log, args...)
	}
}

// deviceEvent sets the device series of the slave at pos (named name)
// that an event's row names: its CoE emergencies, its drive's state and
// faults (in the metrics and OTLP), its ESC error counters.
func (t *telemetry) deviceEvent(d contract.DeviceMetric, pos int, name string, ev *shm.Event, ot *otlpExport) {
	switch d {
	case contract.DeviceEmergency:
		code, _, _ := ev.Emergency()
		t.reg.Emergency(pos, name, code)
		ot.emergency(pos, name, code)
	case contract.DeviceDriveState:
		t.reg.SetDriveState(pos, name, int(ev.Value), ev.TextString())
		ot.driveState(pos, name, int(ev.Value))
	case contract.DeviceDriveFault:
		t.reg.DriveFault(pos, name, uint16(ev.Value))
		ot.driveFault(pos, name, uint16(ev.Value))
	case contract.DeviceDriveFaultCleared:
		t.reg.DriveFaultCleared(pos, name)
		ot.driveFaultCleared(pos, name)
	case contract.DeviceErrorCounters:
		if c, err := metrics.DecodeESCErrorCounters(ev.Text[:]); err == nil {
			t.reg.SetSlaveErrorCounters(pos, name, c)
		}
	}
}

// slaveName is the name label of the slave at pos: its slaveLabel, or ""
// when the bus description has no slave there.
func (cp *CycleProcess) slaveName(pos int) string {
	for _, s := range cp.info.Slaves {
		if s.Position == pos {
			return slaveLabel(s)
		}
	}
	return ""
}

// slaveLabel is the slave's name label: its order code (EL2004) when the
// SII has one, which stays short and stable for dashboards.
func slaveLabel(s contract.SlaveInfo) string {
	if s.OrderCode != "" {
		return s.OrderCode
	}
	return s.Name
}

// runRTChecks runs the host doctor now and every rtcheckInterval until ctx
// ends, exporting each result.
func (t *telemetry) runRTChecks(ctx context.Context, cfg config.Config, log *slog.Logger) {
	opts := rtcheck.DefaultOptions()
	opts.CycleCore, opts.Interface, opts.Priority = cfg.Cycle.Core, cfg.Bus.Interface, cfg.Cycle.Priority
	tick := time.NewTicker(rtcheckInterval)
	defer tick.Stop()
	prev := map[string]rtcheck.Status{}
	for {
		for _, r := range rtcheck.Run(ctx, opts) {
			if err := t.reg.SetRTCheck(r.ID, metrics.CheckStatus(r.Status.String())); err != nil {
				log.Warn("exporting an rtcheck result", "check", r.ID, "err", err)
			}
			if old, seen := prev[r.ID]; seen && old != r.Status && r.Status == rtcheck.Fail {
				log.Warn("host real-time check now fails", "check", r.ID, "found", r.Found, "fix", r.Fix)
			}
			prev[r.ID] = r.Status
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

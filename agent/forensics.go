package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/agent/spikes"
	"github.com/ecagent/ecagent/agent/spikes/tracefs"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// forensics explains the cycle's late cycles (package agent/spikes) and
// reports them as the cycle-spike event: the log, the metrics, MQTT and
// /spikes. When it cannot run it says why — in the log once, in
// ecagent_forensics_enabled and in /readyz's details — and the agent runs
// on without it.
type forensics struct {
	col    *spikes.Collector // nil when off
	reason metrics.ForensicsReason
	why    string
	log    *slog.Logger
	cfg    config.Config
}

// spikesRetained is how many explained spikes /spikes can list.
const spikesRetained = 256

// startForensics starts the collector on the cycle's core, or says why it
// does not.
func startForensics(ctx context.Context, cfg config.Config, log *slog.Logger, tel *telemetry) *forensics {
	f := &forensics{log: log, cfg: cfg, reason: metrics.ForensicsOn}
	f.col, f.reason, f.why = openCollector(ctx, cfg, log)
	tel.reg.SetForensics(f.reason)
	if f.col == nil {
		log.Warn("forensics off: late cycles are counted but not explained", "reason", string(f.reason), "why", f.why)
	} else {
		log.Info("forensics on: late cycles are explained", "core", cfg.Cycle.Core,
			"threshold", time.Duration(int64(cfg.Cycle.Period)*int64(cfg.Forensics.Threshold)/100))
	}
	return f
}

func openCollector(ctx context.Context, cfg config.Config, log *slog.Logger) (*spikes.Collector, metrics.ForensicsReason, string) {
	fc := cfg.Forensics
	if !fc.Enabled {
		return nil, metrics.ForensicsDisabled, "forensics.enabled is false"
	}
	if cfg.Cycle.Core < 0 {
		return nil, metrics.ForensicsUnpinned, "the cycle is not pinned (cycle.core -1): there is no one core to trace"
	}
	col, err := spikes.Start(ctx, spikes.Options{Root: fc.TraceFS, Instance: fc.Instance, CPU: cfg.Cycle.Core,
		BufferKB: fc.BufferKB, Period: time.Duration(cfg.Cycle.Period), Threshold: float64(fc.Threshold) / 100,
		Keep: spikesRetained, Log: log})
	switch {
	case err == nil:
		return col, metrics.ForensicsOn, ""
	case errors.Is(err, fs.ErrPermission):
		return nil, metrics.ForensicsNotPermitted, fmt.Sprintf("tracefs at %s is not permitted (grant CAP_SYS_ADMIN, or mount tracefs with a group the agent is in): %v", fc.TraceFS, err)
	case errors.Is(err, tracefs.ErrUnavailable):
		return nil, metrics.ForensicsNoTracefs, err.Error()
	}
	return nil, metrics.ForensicsFailed, err.Error()
}

// attach names the cycle process whose thread the collector follows.
func (f *forensics) attach(cp *CycleProcess) {
	if f.col != nil {
		f.col.SetCycle(cp.pid, f.cfg.Cycle.Priority)
	}
}

// observe hands one sample to the collector (late ones are queued).
func (f *forensics) observe(s *shm.Sample) {
	if f.col != nil {
		f.col.Observe(s)
	}
}

// deliver reports every spike the collector explained since the last
// call, to the metrics, the log and MQTT.
func (f *forensics) deliver(tel *telemetry, mq *mqttBridge) {
	if f.col == nil {
		return
	}
	tel.reg.SetSpikesUnexplained(f.col.Dropped())
	for {
		select {
		case sp := <-f.col.Spikes():
			tel.reg.CycleSpike(&sp)
			f.logSpike(&sp)
			if mq != nil {
				at := time.Now().Add(-time.Duration(shm.Now() - sp.Wake))
				mq.pub.CycleSpike(&sp, at)
			}
		default:
			return
		}
	}
}

// logSpike writes the cycle-spike event's log line: the cycle, how late,
// and its three largest causes.
func (f *forensics) logSpike(sp *spikes.Spike) {
	e, _ := contract.EventCycleSpike.Info()
	f.log.LogAttrs(context.Background(), e.Level, e.Log, slog.String("event", e.Name), slog.Uint64("cycle", sp.Cycle),
		slog.Duration("late", sp.Late), slog.Duration("excess", sp.Excess), slog.Bool("overrun", sp.Overrun),
		slog.String("cause", sp.Top().String()), slog.String("causes", causesLine(sp, 3)))
}

// causesLine lists the first n causes: "task hog/4711 FIFO 90 2.9ms 97%; …".
func causesLine(sp *spikes.Spike, n int) string {
	var b strings.Builder
	for i, c := range sp.Causes {
		if i == n {
			fmt.Fprintf(&b, "; %d more", len(sp.Causes)-n)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s %v %d%%", c.Class, c.Name, c.Time.Round(time.Microsecond), int(c.Share*100+0.5))
	}
	return b.String()
}

// details are /readyz's lines about forensics.
func (f *forensics) details() []string {
	if f.col == nil {
		return []string{"forensics: off (" + string(f.reason) + "): " + f.why}
	}
	return []string{"forensics: on"}
}

// SpikesReply is what /spikes answers: whether forensics run, and the
// latest spikes, latest first.
type SpikesReply struct {
	Forensics string               `json:"forensics"`
	Why       string               `json:"why,omitempty"`
	Spikes    []contract.SpikeView `json:"spikes"`
}

// ServeHTTP serves /spikes?n=N (default 20).
func (f *forensics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := 20
	if s := r.URL.Query().Get("n"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > spikesRetained {
			http.Error(w, fmt.Sprintf("n=%q: want a number 1..%d", s, spikesRetained), http.StatusBadRequest)
			return
		}
		n = v
	}
	rep := SpikesReply{Forensics: string(f.reason), Why: f.why, Spikes: []contract.SpikeView{}}
	if f.col != nil {
		for _, sp := range f.col.Last(n) {
			rep.Spikes = append(rep.Spikes, sp.View())
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rep)
}

// close stops the collector and leaves tracefs as found.
func (f *forensics) close() {
	if f.col == nil {
		return
	}
	if err := f.col.Close(); err != nil {
		f.log.Warn("forensics: leaving tracefs", "err", err)
	}
}

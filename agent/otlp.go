package agent

import (
	"context"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics/otlp"
	"github.com/ecagent/ecagent/shm"
)

// otlpShutdownGrace bounds the final export when the agent stops.
const otlpShutdownGrace = 5 * time.Second

// otlpExport feeds the OpenTelemetry exporter from the consumer: every
// sample, the ring's drop counter and each closed window. A nil
// *otlpExport (no endpoint configured: the export is off) ignores every
// call.
type otlpExport struct {
	exp *otlp.Exporter
	log *slog.Logger
}

// otlpOptions maps the configuration onto the exporter's options.
func otlpOptions(cfg config.Config, build Build) otlp.Options {
	return otlp.Options{
		Endpoint: cfg.OTLP.Endpoint,
		Protocol: otlp.Protocol(cfg.OTLP.Protocol),
		Interval: cfg.OTLP.Interval,
		Timeout:  cfg.OTLP.Timeout,
		Headers:  cfg.OTLP.HeaderMap(),
		Site:     cfg.Site, Line: cfg.Line, Host: cfg.Host,
		Version: build.Version,
		Target:  time.Duration(cfg.Cycle.Period),
	}
}

// startOTLP starts the export when otlp.endpoint or the OTEL_EXPORTER_OTLP_*
// environment names a collector; otherwise it returns nil. The exporter
// does not connect up front: an unreachable collector is reported at each
// failed export, and the agent runs on.
func startOTLP(ctx context.Context, cfg config.Config, build Build, log *slog.Logger) (*otlpExport, error) {
	opts := otlpOptions(cfg, build)
	if !opts.Enabled() {
		return nil, nil
	}
	exp, err := otlp.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	// The OpenTelemetry SDK reports export errors to its process-wide
	// handler; send them to the agent's log.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("OTLP export", "err", err) }))
	endpoint := cfg.OTLP.Endpoint
	if endpoint == "" {
		endpoint = "OTEL_EXPORTER_OTLP_ENDPOINT=" + os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		if v := os.Getenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"); v != "" {
			endpoint = "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=" + v
		}
	}
	log.Info("OpenTelemetry export", "endpoint", endpoint, "protocol", string(exp.Protocol()))
	return &otlpExport{exp: exp, log: log}, nil
}

func (o *otlpExport) observe(s *shm.Sample) {
	if o != nil {
		o.exp.Observe(s)
	}
}

func (o *otlpExport) segment(s cyclestats.SegmentCounts) {
	if o != nil {
		o.exp.SetSegment(s)
	}
}

func (o *otlpExport) window(r cyclestats.Report) {
	if o != nil {
		o.exp.Window(r)
	}
}

func (o *otlpExport) emergency(pos int, name string, code uint16) {
	if o != nil {
		o.exp.Emergency(pos, name, code)
	}
}

func (o *otlpExport) driveState(pos int, name string, state int) {
	if o != nil {
		o.exp.SetDriveState(pos, name, state)
	}
}

func (o *otlpExport) driveFault(pos int, name string, code uint16) {
	if o != nil {
		o.exp.DriveFault(pos, name, code)
	}
}

func (o *otlpExport) driveFaultCleared(pos int, name string) {
	if o != nil {
		o.exp.DriveFaultCleared(pos, name)
	}
}

// restart starts a new run of periods: the cycle process (re)started.
func (o *otlpExport) restart() {
	if o != nil {
		o.exp.Restart()
	}
}

// stop exports what is left and stops the exporter.
func (o *otlpExport) stop() {
	if o == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), otlpShutdownGrace)
	defer cancel()
	if err := o.exp.Shutdown(ctx); err != nil {
		o.log.Warn("OTLP export: the last export failed", "err", err)
	}
}

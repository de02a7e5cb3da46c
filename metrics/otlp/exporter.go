package otlp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/ecagent/ecagent/metrics"
	"github.com/ecagent/ecagent/metrics/stats"
	"github.com/ecagent/ecagent/shm"
)

// Exponential histogram limits: the SDK's defaults, spelled out because
// the package documentation promises them.
const (
	maxBuckets = 160
	maxScale   = 20
)

// scopeName is the instrumentation scope of every instrument.
const scopeName = "github.com/ecagent/ecagent/metrics/otlp"

// Exporter records the cycle samples into OpenTelemetry instruments and
// exports them periodically over OTLP. Observe, Window, Restart and
// SetRingDrops belong to the one goroutine that drains the sample ring
// (like metrics.Consumer); the export runs on the SDK's goroutine.
type Exporter struct {
	provider *sdkmetric.MeterProvider
	protocol Protocol
	target   int64 // ns
	tracker  stats.JitterTracker

	hist                                       [numQuantities]metric.Float64Histogram
	window                                     [numQuantities]metric.Float64Gauge
	statOpts                                   [numStats][]metric.RecordOption
	cycles, overruns, skipped, lostFrames, wkc metric.Int64Counter

	// Per-slave instruments of the event methods.
	emergencies, driveFaults            metric.Int64Counter
	lastEmergency, driveState, driveErr metric.Int64Gauge

	// Ring drops as in metrics.Consumer.SetRingDrops: the last absolute
	// value and what earlier rings dropped; ringDrops is read by the
	// SDK's callback.
	ringDropsLast, ringDropsBase uint64
	ringDrops                    atomic.Uint64
}

// New builds the exporter and starts its periodic export. It returns
// ErrDisabled when opts.Enabled() is false.
func New(ctx context.Context, opts Options) (*Exporter, error) {
	if !opts.Enabled() {
		return nil, ErrDisabled
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	proto, err := opts.protocol()
	if err != nil {
		return nil, err
	}
	endpoint, err := opts.endpointURL(proto)
	if err != nil {
		return nil, err
	}
	exp, err := newMetricExporter(ctx, proto, endpoint, opts)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(
			attribute.String("service.name", "ecagent"),
			attribute.String("service.version", opts.Version),
			attribute.String("service.instance.id", opts.Site+"/"+opts.Line+"/"+opts.Host),
			attribute.String("host.name", opts.Host),
			attribute.String("site", opts.Site),
			attribute.String("line", opts.Line),
			attribute.String("host", opts.Host),
		),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(), // OTEL_RESOURCE_ATTRIBUTES, OTEL_SERVICE_NAME win
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("otlp: resource: %w", err)
	}
	var readerOpts []sdkmetric.PeriodicReaderOption
	switch {
	case opts.Interval > 0:
		readerOpts = append(readerOpts, sdkmetric.WithInterval(opts.Interval))
	case os.Getenv("OTEL_METRIC_EXPORT_INTERVAL") == "":
		readerOpts = append(readerOpts, sdkmetric.WithInterval(DefaultInterval))
	}
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithResource(res),
		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, readerOpts...)),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationBase2ExponentialHistogram{MaxSize: maxBuckets, MaxScale: maxScale}},
		)),
		// No exemplars: there are no traces to link them to, and offering
		// each measurement to a reservoir costs time per sample.
		sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter),
	)
	e := &Exporter{provider: provider, protocol: proto, target: opts.Target.Nanoseconds(),
		tracker: stats.NewJitterTracker(opts.Target.Nanoseconds())}
	if err := e.instruments(provider.Meter(scopeName)); err != nil {
		_ = provider.Shutdown(ctx)
		return nil, err
	}
	return e, nil
}

// newMetricExporter builds the OTLP exporter of the protocol. What opts
// leave empty the exporter reads from OTEL_EXPORTER_OTLP_*.
func newMetricExporter(ctx context.Context, proto Protocol, endpoint string, opts Options) (sdkmetric.Exporter, error) {
	var (
		exp sdkmetric.Exporter
		err error
	)
	switch proto {
	case ProtocolGRPC:
		var o []otlpmetricgrpc.Option
		if endpoint != "" {
			o = append(o, otlpmetricgrpc.WithEndpointURL(endpoint))
		}
		if opts.Timeout > 0 {
			o = append(o, otlpmetricgrpc.WithTimeout(opts.Timeout))
		}
		if opts.Headers != nil {
			o = append(o, otlpmetricgrpc.WithHeaders(opts.Headers))
		}
		exp, err = otlpmetricgrpc.New(ctx, o...)
	default:
		var o []otlpmetrichttp.Option
		if endpoint != "" {
			o = append(o, otlpmetrichttp.WithEndpointURL(endpoint))
		}
		if opts.Timeout > 0 {
			o = append(o, otlpmetrichttp.WithTimeout(opts.Timeout))
		}
		if opts.Headers != nil {
			o = append(o, otlpmetrichttp.WithHeaders(opts.Headers))
		}
		exp, err = otlpmetrichttp.New(ctx, o...)
	}
	if err != nil {
		return nil, fmt.Errorf("otlp: %s exporter: %w", proto, err)
	}
	return exp, nil
}

// instruments creates every instrument, with the description of the
// Prometheus family it mirrors.
func (e *Exporter) instruments(m metric.Meter) error {
	catalog := metrics.Documented()
	var errs []error
	describe := func(name, unit string, kind instrumentKind) metric.InstrumentOption {
		help, err := helpOf(catalog, prometheusName(name, unit, kind))
		errs = append(errs, err)
		return metric.WithDescription(help)
	}
	for q, spec := range quantitySpecs() {
		var err error
		e.hist[q], err = m.Float64Histogram(spec.name, metric.WithUnit(spec.unit), describe(spec.name, spec.unit, kindHistogram))
		errs = append(errs, err)
		win := spec.name + "_window"
		e.window[q], err = m.Float64Gauge(win, metric.WithUnit(spec.unit), describe(win, spec.unit, kindGauge))
		errs = append(errs, err)
	}
	for i, stat := range metrics.WindowStats() {
		e.statOpts[i] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("stat", stat)))}
	}
	counter := func(name string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(counterUnit), describe(name, counterUnit, kindCounter))
		errs = append(errs, err)
		return c
	}
	e.cycles = counter(nameCycles)
	e.overruns = counter(nameOverruns)
	e.skipped = counter(nameSkipped)
	e.lostFrames = counter(nameLostFrames)
	e.wkc = counter(nameWKCErrors)
	// Export every counter from the start, at 0, as /metrics does: the SDK
	// leaves out an instrument nothing was recorded to, and a collector
	// then sees the first lost frame as the start of a new series instead
	// of an increase.
	for _, c := range []metric.Int64Counter{e.cycles, e.overruns, e.skipped, e.lostFrames, e.wkc} {
		if c != nil {
			c.Add(context.Background(), 0)
		}
	}
	e.emergencies = counter(nameEmergencies)
	e.driveFaults = counter(nameDriveFaults)
	gauge := func(name, unit string) metric.Int64Gauge {
		g, err := m.Int64Gauge(name, metric.WithUnit(unit), describe(name, unit, kindGauge))
		errs = append(errs, err)
		return g
	}
	e.lastEmergency = gauge(nameLastEmergency, unitCode)
	e.driveState = gauge(nameDriveState, unitState)
	e.driveErr = gauge(nameDriveError, unitCode)
	_, err := m.Int64ObservableCounter(nameRingDrops, metric.WithUnit(counterUnit), describe(nameRingDrops, counterUnit, kindCounter),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(int64(e.ringDrops.Load()))
			return nil
		}))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("otlp: instruments: %w", err)
	}
	return nil
}

// Protocol returns the transport in use.
func (e *Exporter) Protocol() Protocol { return e.protocol }

// Observe records one cycle sample, deriving the figures exactly as
// metrics.Consumer.Observe does (period and jitter only between
// consecutive cycle numbers, frame round trip unless lost, DC difference
// and DC controller error when measured). It does not allocate.
func (e *Exporter) Observe(s *shm.Sample) {
	ctx := context.Background()
	e.cycles.Add(ctx, 1)
	if s.Flags&shm.SampleOverrun != 0 {
		e.overruns.Add(ctx, 1)
	}
	if s.Skipped > 0 {
		e.skipped.Add(ctx, int64(s.Skipped))
	}
	if s.Flags&shm.SampleWKCMismatch != 0 {
		e.wkc.Add(ctx, 1)
	}
	if period, jitter, ok := e.tracker.Observe(s.Cycle, s.Wake); ok {
		e.hist[qPeriod].Record(ctx, seconds(period))
		e.hist[qJitter].Record(ctx, seconds(abs(jitter)))
	}
	e.hist[qWakeup].Record(ctx, seconds(s.Wake-s.Deadline))
	job := s.End - s.Wake
	e.hist[qJob].Record(ctx, seconds(job))
	e.hist[qCPULoad].Record(ctx, float64(job)/float64(e.target))
	if s.Flags&shm.SampleLostFrame != 0 {
		e.lostFrames.Add(ctx, 1)
	} else {
		e.hist[qFrameRTT].Record(ctx, seconds(s.Recv-s.Send))
	}
	if s.Flags&shm.SampleDCValid != 0 {
		e.hist[qDCTimeDiff].Record(ctx, seconds(abs(int64(s.DCDiff))))
	}
	if s.Flags&shm.SampleCtlValid != 0 {
		e.hist[qDCCtlErr].Record(ctx, seconds(abs(int64(s.CtlErr))))
	}
}

// Window records the exact statistics of a closed window (the report of
// metrics.Consumer.CloseWindow) as gauges. Quantities without a value in
// the window are left out.
func (e *Exporter) Window(r metrics.WindowReport) {
	ctx := context.Background()
	e.windowStats(ctx, qPeriod, &r.Period, 1e9)
	e.windowStats(ctx, qJitter, &r.Jitter, 1e9)
	e.windowStats(ctx, qWakeup, &r.WakeupLatency, 1e9)
	e.windowStats(ctx, qJob, &r.JobDuration, 1e9)
	e.windowStats(ctx, qFrameRTT, &r.FrameRTT, 1e9)
	e.windowStats(ctx, qDCTimeDiff, &r.DCTimeDifference, 1e9)
	e.windowStats(ctx, qDCCtlErr, &r.DCControllerError, 1e9)
	e.windowStats(ctx, qCPULoad, &r.JobDuration, float64(e.target))
}

// windowStats records one quantity's statistics divided by unit, in the
// order of metrics.WindowStats.
func (e *Exporter) windowStats(ctx context.Context, q quantity, s *stats.Summary, unit float64) {
	if s.Count == 0 {
		return
	}
	values := [numStats]float64{
		float64(s.Min), float64(s.Max), s.Mean, s.StdDev,
		float64(s.P50), float64(s.P90), float64(s.P99), float64(s.P999),
	}
	for i, v := range values {
		e.window[q].Record(ctx, v/unit, e.statOpts[i]...)
	}
}

// slaveAttributes are the attributes of a per-slave data point, the
// labels of the Prometheus series: position and name.
func slaveAttributes(position int, name string) metric.MeasurementOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.Int("position", position), attribute.String("name", name)))
}

// Emergency counts a CoE emergency message of the slave at position and
// records its error code as the slave's last, like
// metrics.Registry.Emergency. The event methods may be called from any
// goroutine; each allocates a little (events are rare).
func (e *Exporter) Emergency(position int, name string, code uint16) {
	ctx, attrs := context.Background(), slaveAttributes(position, name)
	e.emergencies.Add(ctx, 1, attrs)
	e.lastEmergency.Record(ctx, int64(code), attrs)
}

// SetDriveState records the CiA 402 state number of the drive at position
// (metrics.DriveState), like metrics.Registry.SetDriveState.
func (e *Exporter) SetDriveState(position int, name string, state int) {
	e.driveState.Record(context.Background(), int64(state), slaveAttributes(position, name))
}

// DriveFault counts a fault of the drive at position and records its
// error code (0x603F), like metrics.Registry.DriveFault.
func (e *Exporter) DriveFault(position int, name string, code uint16) {
	ctx, attrs := context.Background(), slaveAttributes(position, name)
	e.driveFaults.Add(ctx, 1, attrs)
	e.driveErr.Record(ctx, int64(code), attrs)
}

// DriveFaultCleared sets the error code of the drive at position back to
// 0, like metrics.Registry.DriveFaultCleared.
func (e *Exporter) DriveFaultCleared(position int, name string) {
	e.driveErr.Record(context.Background(), 0, slaveAttributes(position, name))
}

// Restart forgets the previous sample, like metrics.Consumer.Restart: call
// it when the cycle process restarts.
func (e *Exporter) Restart() { e.tracker.Reset() }

// SetRingDrops sets ecagent.sample_ring_drops from the ring's absolute drop
// counter, continuing across a new ring like
// metrics.Consumer.SetRingDrops.
func (e *Exporter) SetRingDrops(n uint64) {
	if n < e.ringDropsLast {
		e.ringDropsBase += e.ringDropsLast
	}
	e.ringDropsLast = n
	e.ringDrops.Store(e.ringDropsBase + n)
}

// Flush exports what has been recorded now, without waiting for the
// interval.
func (e *Exporter) Flush(ctx context.Context) error {
	if err := e.provider.ForceFlush(ctx); err != nil {
		return fmt.Errorf("otlp: flush: %w", err)
	}
	return nil
}

// Shutdown exports what is left and stops the exporter.
func (e *Exporter) Shutdown(ctx context.Context) error {
	if err := e.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("otlp: shutdown: %w", err)
	}
	return nil
}

func seconds(ns int64) float64 { return float64(ns) / 1e9 }

func abs(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

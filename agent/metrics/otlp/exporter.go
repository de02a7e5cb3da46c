package otlp

import (
	"context"
	"errors"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/shm"
)

// Exponential histogram limits: the SDK's defaults, spelled out because
// the package documentation promises them.
const (
	maxBuckets = 160
	maxScale   = 20
)

// scopeName is the instrumentation scope of every instrument.
const scopeName = "github.com/ecagent/ecagent/agent/metrics/otlp"

// Exporter records the cycle samples into OpenTelemetry instruments and
// exports them periodically over OTLP. The figures of each sample come
// from a cyclestats.Deriver, the same computation metrics.Consumer records
// for Prometheus; the Exporter only records them. Observe, Window, Restart
// and SetSegment belong to the one goroutine that drains the sample ring
// (like metrics.Consumer); the export runs on the SDK's goroutine.
type Exporter struct {
	provider *sdkmetric.MeterProvider
	protocol Protocol
	deriver  *cyclestats.Deriver

	hist          [cyclestats.NumQuantities]metric.Float64Histogram
	window        [cyclestats.NumQuantities]metric.Float64Gauge
	windowSamples metric.Int64Gauge
	statOpts      [cyclestats.NumStats][]metric.RecordOption
	quantityOpts  [cyclestats.NumQuantities][]metric.RecordOption
	// counters holds the counters the samples advance; the segment
	// counters' entries stay nil (observable counters read the deriver
	// instead).
	counters [cyclestats.NumCounters]metric.Int64Counter

	// Per-slave instruments of the event methods.
	emergencies, driveFaults            metric.Int64Counter
	lastEmergency, driveState, driveErr metric.Int64Gauge
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
	e := &Exporter{provider: provider, protocol: proto, deriver: cyclestats.NewDeriver(opts.Target)}
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
	b := &instrumentBuilder{m: m, catalog: metrics.Documented()}
	e.cycleInstruments(b)
	e.emergencies = b.counter(nameEmergencies)
	e.driveFaults = b.counter(nameDriveFaults)
	e.lastEmergency = b.gauge(nameLastEmergency, unitCode)
	e.driveState = b.gauge(nameDriveState, unitState)
	e.driveErr = b.gauge(nameDriveError, unitCode)
	if err := errors.Join(b.errs...); err != nil {
		return fmt.Errorf("otlp: instruments: %w", err)
	}
	return nil
}

// cycleInstruments creates the instruments of the cycle's figures, one
// set per row of package cyclestats: each quantity's histogram and window
// gauge, each counter, and those of the sample stream's other figures.
func (e *Exporter) cycleInstruments(b *instrumentBuilder) {
	for q := range cyclestats.NumQuantities {
		var err error
		name, unit := quantityName(q), quantityUnit(q)
		e.hist[q], err = b.m.Float64Histogram(name, metric.WithUnit(unit), b.describe(name, unit, kindHistogram))
		b.errs = append(b.errs, err)
		win := name + "_window"
		e.window[q], err = b.m.Float64Gauge(win, metric.WithUnit(unit), b.describe(win, unit, kindGauge))
		b.errs = append(b.errs, err)
		e.quantityOpts[q] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("quantity", q.String())))}
	}
	for st := range cyclestats.NumStats {
		e.statOpts[st] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("stat", st.String())))}
	}
	var err error
	e.windowSamples, err = b.m.Int64Gauge(nameWindowSamples, metric.WithUnit(unitValues), b.describe(nameWindowSamples, unitValues, kindGauge))
	b.errs = append(b.errs, err)
	for c := range cyclestats.NumCounters {
		if c.Segment() {
			// The segment holds the segment counters as running totals:
			// they are observed.
			b.observedCounter(counterName(c), func() int64 { return int64(e.deriver.SegmentCount(c)) })
			continue
		}
		e.counters[c] = b.counter(counterName(c))
		// Export every counter from the start, at 0, as /metrics does:
		// the SDK leaves out an instrument nothing was recorded to, and a
		// collector then sees the first lost frame as the start of a new
		// series instead of an increase.
		if e.counters[c] != nil {
			e.counters[c].Add(context.Background(), 0)
		}
	}
	// Like ecagent_expected_wkc, absent until the first sample set it.
	_, err = b.m.Int64ObservableGauge(nameExpectedWKC, metric.WithUnit(unitWKC), b.describe(nameExpectedWKC, unitWKC, kindGauge),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			if v, ok := e.deriver.ExpectedWKC(); ok {
				o.Observe(int64(v))
			}
			return nil
		}))
	b.errs = append(b.errs, err)
	target := float64(e.deriver.Target()) / 1e9
	_, err = b.m.Float64ObservableGauge(nameTarget, metric.WithUnit(unitSeconds), b.describe(nameTarget, unitSeconds, kindGauge),
		metric.WithFloat64Callback(func(_ context.Context, o metric.Float64Observer) error {
			o.Observe(target)
			return nil
		}))
	b.errs = append(b.errs, err)
}

// instrumentBuilder creates instruments on one meter, each described by
// the Prometheus family it mirrors, and gathers the errors.
type instrumentBuilder struct {
	m       metric.Meter
	catalog []metrics.Series
	errs    []error
}

// describe returns the description of an instrument: the help text of the
// Prometheus family it translates to.
func (b *instrumentBuilder) describe(name, unit string, kind instrumentKind) metric.InstrumentOption {
	help, err := helpOf(b.catalog, prometheusName(name, unit, kind))
	b.errs = append(b.errs, err)
	return metric.WithDescription(help)
}

func (b *instrumentBuilder) counter(name string) metric.Int64Counter {
	c, err := b.m.Int64Counter(name, metric.WithUnit(counterUnit), b.describe(name, counterUnit, kindCounter))
	b.errs = append(b.errs, err)
	return c
}

func (b *instrumentBuilder) observedCounter(name string, value func() int64) {
	_, err := b.m.Int64ObservableCounter(name, metric.WithUnit(counterUnit), b.describe(name, counterUnit, kindCounter),
		metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
			o.Observe(value())
			return nil
		}))
	b.errs = append(b.errs, err)
}

func (b *instrumentBuilder) gauge(name, unit string) metric.Int64Gauge {
	g, err := b.m.Int64Gauge(name, metric.WithUnit(unit), b.describe(name, unit, kindGauge))
	b.errs = append(b.errs, err)
	return g
}

// Protocol returns the transport in use.
func (e *Exporter) Protocol() Protocol { return e.protocol }

// Observe records one cycle sample: its figures (cyclestats.Deriver.Derive,
// exactly those metrics.Consumer.Observe records) go into the histograms
// and the counters. It does not allocate.
func (e *Exporter) Observe(s *shm.Sample) {
	ctx := context.Background()
	f := e.deriver.Derive(s)
	for c := range cyclestats.NumCounters {
		if n := f.Count(c); n > 0 {
			e.counters[c].Add(ctx, n)
		}
	}
	for q := range cyclestats.NumQuantities {
		if v, ok := f.Value(q); ok {
			e.hist[q].Record(ctx, v)
		}
	}
}

// Window records the exact statistics of a closed window (the report of
// metrics.Consumer.CloseWindow, cyclestats.Report.Values) as gauges, and
// the number of values behind each quantity's statistics. Quantities
// without a value in the window have no statistics recorded (their count,
// 0, is).
func (e *Exporter) Window(r cyclestats.Report) {
	ctx := context.Background()
	for q := range cyclestats.NumQuantities {
		s := r.Summary(q)
		e.windowSamples.Record(ctx, s.Count, e.quantityOpts[q]...)
		values, ok := r.Values(q)
		if !ok {
			continue
		}
		for i, v := range values {
			e.window[q].Record(ctx, v, e.statOpts[i]...)
		}
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
// (the numbers of ecagent_drive_state), like metrics.Registry.SetDriveState.
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
func (e *Exporter) Restart() { e.deriver.Restart() }

// SetSegment sets the segment counters from the running totals the
// segment holds, read at one drain (cyclestats.ReadSegment,
// cyclestats.Deriver.SetSegment).
func (e *Exporter) SetSegment(s cyclestats.SegmentCounts) { e.deriver.SetSegment(s) }

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

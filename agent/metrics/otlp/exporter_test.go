package otlp

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/agent/metrics/otlp/otlptest"
	"github.com/ecagent/ecagent/shm"
)

// expBucketIndex is the base-2 exponential bucket of v > 0 at scale: the
// index i with base^i < v ≤ base^(i+1), base = 2^(2^-scale).
func expBucketIndex(v float64, scale int32) int32 {
	return int32(math.Ceil(math.Log2(v)*math.Exp2(float64(scale)))) - 1
}

// TestExportOverHTTP feeds the same samples to the exporter and to the
// Prometheus consumer of package metrics, exports to an OTLP/HTTP
// receiver and checks what arrives: resource attributes, exponential
// histograms whose counts, sums, extremes and buckets match the values,
// counters equal to the consumer's, window gauges, descriptions and units.
func TestExportOverHTTP(t *testing.T) {
	e, rcv := newHTTPExporter(t, ProtocolHTTPProtobuf)
	ctx := context.Background()
	reg, err := metrics.NewRegistry(metrics.Options{Site: "plant-1", Line: "line-3", Host: "ipc-7", Target: testTarget, CycleCore: -1})
	if err != nil {
		t.Fatal(err)
	}
	c := reg.Consumer()
	const n = 1000
	for _, s := range testSamples(n) {
		e.Observe(&s)
		c.Observe(&s)
	}
	e.SetSegment(ringDrops(7))
	c.SetSegment(ringDrops(7))
	report := c.CloseWindow()
	e.Window(report)
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	exports := rcv.Exports()
	if len(exports) == 0 {
		t.Fatal("the receiver got nothing")
	}

	// The resource: the fleet identity.
	_, res := otlptest.Latest(exports, "ecagent.cycle_jitter")
	for k, want := range map[string]string{
		"service.name": "ecagent", "service.version": "v1.2.3", "service.instance.id": "plant-1/line-3/ipc-7",
		"host.name": "ipc-7", "site": "plant-1", "line": "line-3", "host": "ipc-7",
	} {
		if res[k] != want {
			t.Errorf("resource attribute %s = %q, want %q", k, res[k], want)
		}
	}

	// The jitter histogram, against the values themselves.
	var jitters []float64
	for i := 1; i < n; i++ {
		jitters = append(jitters, math.Abs(float64(sampleLatency(i)-sampleLatency(i-1)))/1e9)
	}
	checkExpHistogram(t, exports, "ecagent.cycle_jitter", jitters)
	var rtts []float64
	for _, s := range testSamples(n) {
		if s.Flags&shm.SampleLostFrame == 0 {
			rtts = append(rtts, float64(s.Recv-s.Send)/1e9)
		}
	}
	checkExpHistogram(t, exports, "ecagent.frame_rtt", rtts)
	var ctlErrs []float64
	for _, s := range testSamples(n) {
		if s.Flags&shm.SampleCtlValid != 0 {
			ctlErrs = append(ctlErrs, math.Abs(float64(s.CtlErr))/1e9)
		}
	}
	checkExpHistogram(t, exports, "ecagent.dc_controller_error", ctlErrs)

	// Every histogram counts what the Prometheus consumer counted.
	prom := gatherHistogramCounts(t, reg)
	for q := range cyclestats.NumQuantities {
		name, unit := quantityName(q), quantityUnit(q)
		m, _ := otlptest.Latest(exports, name)
		if m == nil || m.GetExponentialHistogram() == nil {
			t.Errorf("%s: no exponential histogram exported", name)
			continue
		}
		dp := m.GetExponentialHistogram().GetDataPoints()[0]
		if want := prom[metrics.HistogramName(q)]; dp.GetCount() != want {
			t.Errorf("%s: count %d, the Prometheus histogram has %d", name, dp.GetCount(), want)
		}
		if m.GetUnit() != unit {
			t.Errorf("%s: unit %q, want %q", name, m.GetUnit(), unit)
		}
	}

	// Counters: the values the test data makes, and the Prometheus
	// consumer's.
	promCounters := gatherCounters(t, reg)
	wantCounters := [cyclestats.NumCounters]int64{
		cyclestats.CounterCycles: n, cyclestats.CounterOverruns: 1, cyclestats.CounterSkipped: 2, cyclestats.CounterLostFrames: 4,
		cyclestats.CounterLateAnswers: 3, cyclestats.CounterWKCErrors: 3, cyclestats.CounterRingDrops: 7,
	}
	for c, want := range wantCounters {
		name := counterName(cyclestats.Counter(c))
		m, _ := otlptest.Latest(exports, name)
		if m == nil || m.GetSum() == nil || !m.GetSum().GetIsMonotonic() {
			t.Errorf("%s: no monotonic sum exported (%v)", name, m)
			continue
		}
		got := m.GetSum().GetDataPoints()[0].GetAsInt()
		if got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
		if p := metrics.CounterName(cyclestats.Counter(c)); promCounters[p] != float64(got) {
			t.Errorf("%s = %d, but %s = %g", name, got, p, promCounters[p])
		}
	}

	// The gauges beside the quantities'.
	if m, _ := otlptest.Latest(exports, nameExpectedWKC); len(m.GetGauge().GetDataPoints()) != 1 || m.GetGauge().GetDataPoints()[0].GetAsInt() != 8 {
		t.Errorf("%s: %v, want 8", nameExpectedWKC, m)
	}
	if m, _ := otlptest.Latest(exports, nameTarget); len(m.GetGauge().GetDataPoints()) != 1 || m.GetGauge().GetDataPoints()[0].GetAsDouble() != testTarget.Seconds() {
		t.Errorf("%s: %v, want %g", nameTarget, m, testTarget.Seconds())
	}
	m, _ := otlptest.Latest(exports, nameWindowSamples)
	counts := map[string]int64{}
	for _, dp := range m.GetGauge().GetDataPoints() {
		counts[otlptest.Attributes(dp.GetAttributes())["quantity"]] = dp.GetAsInt()
	}
	for q := range cyclestats.NumQuantities {
		if want := report.Summary(q).Count; counts[q.String()] != want || want == 0 {
			t.Errorf("%s{quantity=%s} = %d, want the report's %d (> 0)", nameWindowSamples, q, counts[q.String()], want)
		}
	}

	// Window gauges: the exact statistics, with a stat attribute.
	m, _ = otlptest.Latest(exports, "ecagent.cycle_jitter_window")
	if m == nil || m.GetGauge() == nil {
		t.Fatal("no ecagent.cycle_jitter_window gauge")
	}
	got := map[string]float64{}
	for _, dp := range m.GetGauge().GetDataPoints() {
		got[otlptest.Attributes(dp.GetAttributes())["stat"]] = dp.GetAsDouble()
	}
	if got["max"] != 300e-6 || got["min"] != 0 || got["p50"] != 0 || len(got) != len(metrics.WindowStats()) {
		t.Errorf("jitter window stats %v, want max 300 µs, min and p50 0, and all of %v", got, metrics.WindowStats())
	}
	m, _ = otlptest.Latest(exports, "ecagent.dc_controller_error_window")
	got = map[string]float64{}
	for _, dp := range m.GetGauge().GetDataPoints() {
		got[otlptest.Attributes(dp.GetAttributes())["stat"]] = dp.GetAsDouble()
	}
	if got["max"] != 200e-9 || got["min"] != 0 || got["max"] != float64(report.Windows[cyclestats.QuantityDCControllerError].Max)/1e9 {
		t.Errorf("DC controller error window stats %v, want max 200 ns (= the report's %d ns), min 0", got, report.Windows[cyclestats.QuantityDCControllerError].Max)
	}
	m, _ = otlptest.Latest(exports, "ecagent.cycle_cpu_load_window")
	for _, dp := range m.GetGauge().GetDataPoints() {
		stat := otlptest.Attributes(dp.GetAttributes())["stat"]
		if want := 0.1; stat == "max" && dp.GetAsDouble() != want { // 100 µs job / 1 ms
			t.Errorf("cpu load window max %g, want %g", dp.GetAsDouble(), want)
		}
	}

	// Every metric has the help text of the Prometheus family it mirrors.
	help := map[string]string{}
	for _, s := range metrics.Documented() {
		help[s.Name] = s.Help
	}
	seen := 0
	for _, ex := range exports {
		for _, rm := range ex.Request.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				if sm.GetScope().GetName() != scopeName {
					t.Errorf("scope %q, want %q", sm.GetScope().GetName(), scopeName)
				}
				for _, m := range sm.GetMetrics() {
					kind := kindGauge
					switch {
					case m.GetExponentialHistogram() != nil:
						kind = kindHistogram
					case m.GetSum() != nil:
						kind = kindCounter
					}
					p := prometheusName(m.GetName(), m.GetUnit(), kind)
					if help[p] == "" || m.GetDescription() != help[p] {
						t.Errorf("%s (kind %d): description %q, want the help of %s", m.GetName(), kind, m.GetDescription(), p)
					}
					seen++
				}
			}
		}
	}
	// Per quantity a histogram and a window gauge; every counter; the
	// window sample counts, the expected WKC and the target.
	if want := 2*int(cyclestats.NumQuantities) + int(cyclestats.NumCounters) + 3; seen != want {
		t.Errorf("%d metrics exported, want %d", seen, want)
	}
}

// checkExpHistogram checks an exported exponential histogram against the
// values it was fed: count, sum, min, max, zero bucket, and the count of
// every positive bucket at the exported scale.
func checkExpHistogram(t *testing.T, exports []otlptest.Export, name string, values []float64) {
	t.Helper()
	m, _ := otlptest.Latest(exports, name)
	if m == nil || m.GetExponentialHistogram() == nil {
		t.Fatalf("%s: no exponential histogram", name)
	}
	h := m.GetExponentialHistogram()
	if h.GetAggregationTemporality() != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
		t.Errorf("%s: temporality %v, want cumulative (the default)", name, h.GetAggregationTemporality())
	}
	dp := h.GetDataPoints()[0]
	var sum float64
	zero := uint64(0)
	want := map[int32]uint64{}
	for _, v := range values {
		sum += v
		if v == 0 {
			zero++
			continue
		}
		want[expBucketIndex(v, dp.GetScale())]++
	}
	if dp.GetCount() != uint64(len(values)) || math.Abs(dp.GetSum()-sum) > 1e-12 {
		t.Errorf("%s: count %d sum %g, want %d and %g", name, dp.GetCount(), dp.GetSum(), len(values), sum)
	}
	if dp.GetMin() != slices.Min(values) || dp.GetMax() != slices.Max(values) {
		t.Errorf("%s: min %g max %g, want %g and %g", name, dp.GetMin(), dp.GetMax(), slices.Min(values), slices.Max(values))
	}
	if dp.GetZeroCount() != zero {
		t.Errorf("%s: zero count %d, want %d", name, dp.GetZeroCount(), zero)
	}
	if dp.GetScale() < 0 || dp.GetScale() > maxScale {
		t.Errorf("%s: scale %d", name, dp.GetScale())
	}
	got := map[int32]uint64{}
	pos := dp.GetPositive()
	for i, c := range pos.GetBucketCounts() {
		if c != 0 {
			got[pos.GetOffset()+int32(i)] = c
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: buckets %v, want %v (scale %d)", name, got, want, dp.GetScale())
	}
	for i, c := range want {
		if got[i] != c {
			t.Errorf("%s: bucket %d holds %d, want %d (scale %d)", name, i, got[i], c, dp.GetScale())
		}
	}
}

// gatherCounters returns the value of every counter of the Prometheus
// registry that has a single series.
func gatherCounters(t *testing.T, reg *metrics.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		if ms := f.GetMetric(); len(ms) == 1 && ms[0].GetCounter() != nil {
			out[f.GetName()] = ms[0].GetCounter().GetValue()
		}
	}
	return out
}

// gatherHistogramCounts returns the sample count of every histogram of
// the Prometheus registry.
func gatherHistogramCounts(t *testing.T, reg *metrics.Registry) map[string]uint64 {
	t.Helper()
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, f := range fams {
		if h := f.GetMetric()[0].GetHistogram(); h != nil {
			out[f.GetName()] = h.GetSampleCount()
		}
	}
	return out
}

// TestExportOverGRPCFromEnvironment configures the exporter through the
// standard environment only: endpoint, protocol, headers, temporality and
// resource attributes.
func TestExportOverGRPCFromEnvironment(t *testing.T) {
	clearOTELEnv(t)
	rcv, err := otlptest.NewGRPC()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=plant-1")
	t.Setenv("OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", "delta")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test")
	ctx := context.Background()
	e, err := New(ctx, testOptions("", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(ctx)
	if e.Protocol() != ProtocolGRPC {
		t.Fatalf("protocol %s, want grpc from OTEL_EXPORTER_OTLP_PROTOCOL", e.Protocol())
	}
	samples := testSamples(100)
	for i := range samples {
		e.Observe(&samples[i])
	}
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	exports := rcv.Exports()
	if len(exports) == 0 {
		t.Fatal("the gRPC receiver got nothing")
	}
	if h := exports[0].Headers["x-tenant"]; !slices.Equal(h, []string{"plant-1"}) {
		t.Errorf("header x-tenant %v, want [plant-1] from OTEL_EXPORTER_OTLP_HEADERS", h)
	}
	m, res := otlptest.Latest(exports, "ecagent.cycle_jitter")
	if res["deployment.environment"] != "test" || res["host"] != "ipc-7" {
		t.Errorf("resource %v lacks OTEL_RESOURCE_ATTRIBUTES or the fleet labels", res)
	}
	h := m.GetExponentialHistogram()
	if h.GetAggregationTemporality() != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_DELTA || h.GetDataPoints()[0].GetCount() != 99 {
		t.Errorf("jitter: temporality %v count %d, want delta and 99", h.GetAggregationTemporality(), h.GetDataPoints()[0].GetCount())
	}
}

// TestCountersStartAtZero: before any sample, every counter is exported
// with 0, as /metrics shows them.
func TestCountersStartAtZero(t *testing.T) {
	e, rcv := newHTTPExporter(t, "")
	ctx := context.Background()
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for c := range cyclestats.NumCounters {
		name := counterName(c)
		m, _ := otlptest.Latest(rcv.Exports(), name)
		if m == nil || m.GetSum().GetDataPoints()[0].GetAsInt() != 0 {
			t.Errorf("%s: %v, want a sum at 0", name, m)
		}
	}
}

func TestObserveAllocatesNothing(t *testing.T) {
	clearOTELEnv(t)
	ctx := context.Background()
	e, err := New(ctx, testOptions("http://127.0.0.1:1", ProtocolHTTPProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_ = e.Shutdown(ctx) // nobody listens on port 1
	}()
	samples := testSamples(1000)
	for i := range samples { // every bucket and attribute set exists
		e.Observe(&samples[i])
	}
	i := 0
	if a := testing.AllocsPerRun(1000, func() {
		e.Observe(&samples[i%len(samples)])
		i++
	}); a != 0 {
		t.Errorf("Observe allocates %v times per sample", a)
	}
}

func BenchmarkObserve(b *testing.B) {
	for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER"} {
		b.Setenv(v, "")
	}
	ctx := context.Background()
	e, err := New(ctx, testOptions("http://127.0.0.1:1", ProtocolHTTPProtobuf))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		_ = e.Shutdown(ctx)
	}()
	samples := testSamples(1000)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		e.Observe(&samples[i%len(samples)])
	}
}

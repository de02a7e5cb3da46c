package otlp

import (
	"context"
	"errors"
	"maps"
	"math"
	"slices"
	"testing"
	"time"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/ecagent/ecagent/metrics"
	"github.com/ecagent/ecagent/metrics/otlp/otlptest"
	"github.com/ecagent/ecagent/shm"
)

const testTarget = time.Millisecond

// clearOTELEnv empties every OTEL_* variable these tests or the SDK read,
// so the machine's environment cannot change a test's outcome.
func clearOTELEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{
		"OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
		"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME",
	} {
		t.Setenv(v, "")
	}
}

func testOptions(endpoint string, p Protocol) Options {
	return Options{Endpoint: endpoint, Protocol: p, Interval: time.Hour, // exports only on Flush
		Site: "plant-1", Line: "line-3", Host: "ipc-7", Version: "v1.2.3", Target: testTarget}
}

// sampleLatency is the wake-up latency of cycle i in the test data: 10 µs,
// 60 µs every 100th cycle, 310 µs at cycle 500.
func sampleLatency(i int) int64 {
	switch {
	case i == 500:
		return 310_000
	case i%100 == 0:
		return 60_000
	}
	return 10_000
}

// testSamples is n cycles on a 1 ms schedule with the latencies above, a
// 20 µs frame round trip (every 250th frame lost, its answer discarded
// late by the next cycle), a 100 µs job (an overrun skipping two
// deadlines at cycle 700), a WKC error every 333rd cycle, a DC difference
// on even cycles and a DC controller error on every third cycle.
func testSamples(n int) []shm.Sample {
	out := make([]shm.Sample, n)
	for i := range out {
		deadline := 1_000_000_000 + int64(i)*testTarget.Nanoseconds()
		wake := deadline + sampleLatency(i)
		s := shm.Sample{Cycle: uint64(i), Deadline: deadline, Wake: wake, Send: wake + 1000, Recv: wake + 21_000,
			End: wake + 100_000, WKC: 8, ExpectedWKC: 8}
		if i%250 == 249 {
			s.Flags |= shm.SampleLostFrame
			s.Recv = s.Send
		}
		if i%250 == 0 && i > 0 {
			s.Flags |= shm.SampleLateAnswer
		}
		if i%333 == 332 {
			s.Flags |= shm.SampleWKCMismatch
			s.WKC = 6
		}
		if i == 700 {
			s.Flags |= shm.SampleOverrun
			s.Skipped = 2
		}
		if i%2 == 0 {
			s.Flags |= shm.SampleDCValid
			s.DCDiff = int32((i%7 - 3) * 10)
		}
		if i%3 == 0 {
			s.Flags |= shm.SampleCtlValid
			s.CtlErr = int32((i%11 - 5) * 40)
		}
		out[i] = s
	}
	return out
}

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
	clearOTELEnv(t)
	rcv, err := otlptest.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	ctx := context.Background()
	e, err := New(ctx, testOptions(rcv.URL(), ProtocolHTTPProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(ctx)
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
	e.SetRingDrops(7)
	c.SetRingDrops(7)
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
	for q := range metrics.NumQuantities {
		name, unit := quantityName(q), quantityUnit(q)
		m, _ := otlptest.Latest(exports, name)
		if m == nil || m.GetExponentialHistogram() == nil {
			t.Errorf("%s: no exponential histogram exported", name)
			continue
		}
		dp := m.GetExponentialHistogram().GetDataPoints()[0]
		if want := prom[q.Info().Histogram]; dp.GetCount() != want {
			t.Errorf("%s: count %d, the Prometheus histogram has %d", name, dp.GetCount(), want)
		}
		if m.GetUnit() != unit {
			t.Errorf("%s: unit %q, want %q", name, m.GetUnit(), unit)
		}
	}

	// Counters: the values the test data makes, and the Prometheus
	// consumer's.
	promCounters := gatherCounters(t, reg)
	wantCounters := [metrics.NumCounters]int64{
		metrics.CounterCycles: n, metrics.CounterOverruns: 1, metrics.CounterSkipped: 2, metrics.CounterLostFrames: 4,
		metrics.CounterLateAnswers: 3, metrics.CounterWKCErrors: 3, metrics.CounterRingDrops: 7,
	}
	for c, want := range wantCounters {
		name := counterName(metrics.Counter(c))
		m, _ := otlptest.Latest(exports, name)
		if m == nil || m.GetSum() == nil || !m.GetSum().GetIsMonotonic() {
			t.Errorf("%s: no monotonic sum exported (%v)", name, m)
			continue
		}
		got := m.GetSum().GetDataPoints()[0].GetAsInt()
		if got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
		if p := metrics.Counter(c).Info().Name; promCounters[p] != float64(got) {
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
	for q := range metrics.NumQuantities {
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
	if got["max"] != 200e-9 || got["min"] != 0 || got["max"] != float64(report.DCControllerError.Max)/1e9 {
		t.Errorf("DC controller error window stats %v, want max 200 ns (= the report's %d ns), min 0", got, report.DCControllerError.Max)
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
	if want := 2*int(metrics.NumQuantities) + int(metrics.NumCounters) + 3; seen != want {
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
	clearOTELEnv(t)
	rcv, err := otlptest.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	ctx := context.Background()
	e, err := New(ctx, testOptions(rcv.URL(), ""))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(ctx)
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for c := range metrics.NumCounters {
		name := counterName(c)
		m, _ := otlptest.Latest(rcv.Exports(), name)
		if m == nil || m.GetSum().GetDataPoints()[0].GetAsInt() != 0 {
			t.Errorf("%s: %v, want a sum at 0", name, m)
		}
	}
}

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endpoint string
		env      map[string]string
		want     bool
	}{
		{name: "nothing configured"},
		{name: "endpoint option", endpoint: "http://collector:4318", want: true},
		{name: "OTEL_EXPORTER_OTLP_ENDPOINT", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: true},
		{name: "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", env: map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://c:4318/v1/metrics"}, want: true},
		{name: "OTEL_SDK_DISABLED", endpoint: "http://c:4318", env: map[string]string{"OTEL_SDK_DISABLED": "true"}},
		{name: "OTEL_METRICS_EXPORTER=none", endpoint: "http://c:4318", env: map[string]string{"OTEL_METRICS_EXPORTER": "none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTELEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o := testOptions(tc.endpoint, "")
			if got := o.Enabled(); got != tc.want {
				t.Errorf("Enabled() = %v, want %v", got, tc.want)
			}
			if !tc.want {
				if _, err := New(context.Background(), o); !errors.Is(err, ErrDisabled) {
					t.Errorf("New: %v, want ErrDisabled", err)
				}
			}
		})
	}
}

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		env    map[string]string
	}{
		{name: "protocol", change: func(o *Options) { o.Protocol = "http/json" }},
		{name: "protocol from the environment", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"}},
		{name: "endpoint without a scheme", change: func(o *Options) { o.Endpoint = "collector:4318" }},
		{name: "endpoint with another scheme", change: func(o *Options) { o.Endpoint = "grpc://collector:4317" }},
		{name: "empty site", change: func(o *Options) { o.Site = "" }},
		{name: "no target", change: func(o *Options) { o.Target = 0 }},
		{name: "negative interval", change: func(o *Options) { o.Interval = -time.Second }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearOTELEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			o := testOptions("http://127.0.0.1:1", "")
			if tc.change != nil {
				tc.change(&o)
			}
			if _, err := New(context.Background(), o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("New: %v, want ErrInvalidOptions", err)
			}
		})
	}
}

func TestEndpointURL(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		p        Protocol
		want     string
	}{
		{"http://collector:4318", ProtocolHTTPProtobuf, "http://collector:4318/v1/metrics"},
		{"https://collector:4318/", ProtocolHTTPProtobuf, "https://collector:4318/v1/metrics"},
		{"https://gw.example/otlp/v1/metrics", ProtocolHTTPProtobuf, "https://gw.example/otlp/v1/metrics"},
		{"http://collector:4317", ProtocolGRPC, "http://collector:4317"},
		{"", ProtocolGRPC, ""},
	} {
		got, err := Options{Endpoint: tc.endpoint}.endpointURL(tc.p)
		if err != nil || got != tc.want {
			t.Errorf("endpointURL(%q, %s) = %q, %v; want %q", tc.endpoint, tc.p, got, err, tc.want)
		}
	}
}

// prometheusOnly lists, with the reason, the documented Prometheus
// families that have no OpenTelemetry instrument on purpose. The Exporter
// is fed the cycle's sample ring and its events; these families come from
// what the agent learns elsewhere (the bus scan, the supervision of the
// cycle process, the host, its own build) or describe the Prometheus
// endpoint itself.
func prometheusOnly() map[string]string {
	const (
		scan    = "set from the bus scan and the slaves' registers, not from the sample or event ring"
		dc      = "the distributed-clock configuration, set once after the bus scan"
		process = "the supervision of the cycle process by the agent"
		host    = "read from the host's /proc at scrape time"
	)
	return map[string]string{
		"ecagent_bus_slaves":                      scan,
		"ecagent_slave_al_state":                  scan,
		"ecagent_slave_al_status_code":            scan,
		"ecagent_slave_port_errors":               scan,
		"ecagent_slave_esc_errors":                scan,
		"ecagent_bus_events_total":                "the bus supervisor's events, counted by the agent; OTLP users get the same events over MQTT",
		"ecagent_dc_enabled":                      dc,
		"ecagent_dc_reference_position":           dc,
		"ecagent_dc_sync0_cycle_seconds":          dc,
		"ecagent_dc_sync0_shift_seconds":          dc,
		"ecagent_dc_sync1_shift_seconds":          dc,
		"ecagent_cycle_process_up":                process,
		"ecagent_cycle_process_starts_total":      process,
		"ecagent_cycle_process_cpu_seconds_total": host,
		"ecagent_host_cpu_busy_ratio":             host,
		"ecagent_cycle_core_busy_ratio":           host,
		"ecagent_scrape_collector_success":        "the success of a scrape's collectors: a property of the Prometheus endpoint",
		"ecagent_rt_setting":                      "reported once by the cycle process at start, not a measurement of the cycle",
		"ecagent_rt_check":                        "the host doctor's verdicts, not a measurement of the cycle",
		"ecagent_build_info":                      "build identity; OpenTelemetry carries it as the resource attribute service.version",
	}
}

// TestNamesMirrorPrometheus checks the mirror both ways on what the
// Exporter actually exports, every method exercised: each instrument
// translates to a documented Prometheus family of the same type, and each
// documented family has an instrument unless prometheusOnly names it.
func TestNamesMirrorPrometheus(t *testing.T) {
	clearOTELEnv(t)
	rcv, err := otlptest.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	ctx := context.Background()
	e, err := New(ctx, testOptions(rcv.URL(), ProtocolHTTPProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(ctx)
	reg, err := metrics.NewRegistry(metrics.Options{Site: "plant-1", Line: "line-3", Host: "ipc-7", Target: testTarget, CycleCore: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range testSamples(1000) {
		e.Observe(&s)
		reg.Consumer().Observe(&s)
	}
	e.SetRingDrops(1)
	e.Window(reg.Consumer().CloseWindow())
	e.Emergency(1, "AKD", 0x8611)
	e.SetDriveState(1, "AKD", 8) // fault
	e.DriveFault(1, "AKD", 0x7305)
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	documented := map[string]metrics.SeriesType{}
	for _, s := range metrics.Documented() {
		documented[s.Name] = s.Type
	}
	only := prometheusOnly()
	mirrored := map[string]string{} // Prometheus name → instrument
	for _, ex := range rcv.Exports() {
		for _, rm := range ex.Request.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					kind, typ := kindGauge, metrics.TypeGauge
					switch {
					case m.GetExponentialHistogram() != nil:
						kind, typ = kindHistogram, metrics.TypeHistogram
					case m.GetSum() != nil:
						kind, typ = kindCounter, metrics.TypeCounter
					}
					p := prometheusName(m.GetName(), m.GetUnit(), kind)
					mirrored[p] = m.GetName()
					if got, ok := documented[p]; !ok || got != typ {
						t.Errorf("instrument %s (unit %q) translates to %s, documented as %q; want a documented %s",
							m.GetName(), m.GetUnit(), p, got, typ)
					}
					if reason, ok := only[p]; ok {
						t.Errorf("%s is mirrored by %s but listed as Prometheus-only (%s)", p, m.GetName(), reason)
					}
				}
			}
		}
	}
	for name := range documented {
		if _, ok := mirrored[name]; !ok && only[name] == "" {
			t.Errorf("%s has no OpenTelemetry instrument and is not listed as Prometheus-only", name)
		}
	}
	for name := range only {
		if _, ok := documented[name]; !ok {
			t.Errorf("Prometheus-only %s is not a documented family", name)
		}
	}
}

// TestEventMethods exports emergencies and drive events and checks the
// per-slave data points: counts, last codes and states, with the position
// and name attributes.
func TestEventMethods(t *testing.T) {
	clearOTELEnv(t)
	rcv, err := otlptest.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	ctx := context.Background()
	e, err := New(ctx, testOptions(rcv.URL(), ProtocolHTTPProtobuf))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(ctx)
	e.Emergency(1, "AKD", 0x8611)
	e.Emergency(1, "AKD", 0x8400)
	e.Emergency(2, "EL3004", 0xFF01)
	e.SetDriveState(1, "AKD", 5) // operation enabled (CiA 402 state numbers as ecagent_drive_state exports them)
	e.DriveFault(1, "AKD", 0x7305)
	e.SetDriveState(1, "AKD", 8) // fault
	e.DriveFault(3, "EL7201", 0x2310)
	e.DriveFaultCleared(3, "EL7201")
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	exports := rcv.Exports()
	// points returns "position/name" → value of the newest data of a metric.
	points := func(name string) map[string]int64 {
		m, _ := otlptest.Latest(exports, name)
		if m == nil {
			t.Fatalf("%s not exported", name)
		}
		var dps []*metricspb.NumberDataPoint
		if m.GetSum() != nil {
			if !m.GetSum().GetIsMonotonic() {
				t.Errorf("%s: a sum that is not monotonic", name)
			}
			dps = m.GetSum().GetDataPoints()
		} else {
			dps = m.GetGauge().GetDataPoints()
		}
		out := map[string]int64{}
		for _, dp := range dps {
			a := otlptest.Attributes(dp.GetAttributes())
			out[a["position"]+"/"+a["name"]] = dp.GetAsInt()
		}
		return out
	}
	tests := []struct {
		name string
		want map[string]int64
	}{
		{nameEmergencies, map[string]int64{"1/AKD": 2, "2/EL3004": 1}},
		{nameLastEmergency, map[string]int64{"1/AKD": 0x8400, "2/EL3004": 0xFF01}},
		{nameDriveState, map[string]int64{"1/AKD": 8}},
		{nameDriveFaults, map[string]int64{"1/AKD": 1, "3/EL7201": 1}},
		{nameDriveError, map[string]int64{"1/AKD": 0x7305, "3/EL7201": 0}},
	}
	for _, tt := range tests {
		if got := points(tt.name); !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
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

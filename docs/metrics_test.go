package docs

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/agent/metrics/otlp"
	"github.com/ecagent/ecagent/agent/metrics/otlp/otlptest"
	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// The fleet labels of the representative registry; any non-empty values
// do, they are not rendered.
const (
	docSite = "plant-1"
	docLine = "line-1"
	docHost = "ipc-1"
)

// family is one Prometheus metric family as the registry describes it.
type family struct {
	name, help, typ string
	labels          []string // variable labels
	constLabels     []string // names only
	present         string   // when the family can be absent, from metrics.Documented
}

// descPattern matches prometheus.Desc.String, the only way a Desc shows
// its name, help and labels.
var descPattern = regexp.MustCompile(`^Desc\{fqName: ("(?:[^"\\]|\\.)*"), help: ("(?:[^"\\]|\\.)*"), unit: "(?:[^"\\]|\\.)*", constLabels: \{(.*)\}, variableLabels: \{(.*)\}\}$`)

// parseDesc reads a family's name, help and labels from its descriptor.
func parseDesc(d *prometheus.Desc) (family, error) {
	m := descPattern.FindStringSubmatch(d.String())
	if m == nil {
		return family{}, fmt.Errorf("descriptor %s: not in the form this generator reads (client_golang changed Desc.String?)", d)
	}
	name, err1 := strconv.Unquote(m[1])
	help, err2 := strconv.Unquote(m[2])
	if err1 != nil || err2 != nil {
		return family{}, fmt.Errorf("descriptor %s: name or help not quoted", d)
	}
	f := family{name: name, help: help}
	for _, kv := range splitNonEmpty(m[3]) {
		k, _, _ := strings.Cut(kv, "=")
		f.constLabels = append(f.constLabels, k)
	}
	for _, l := range splitNonEmpty(m[4]) {
		f.labels = append(f.labels, strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"))
	}
	return f, nil
}

func splitNonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// agentRegistry builds the agent's registry as agent/telemetry.go does,
// with the MQTT publisher's collector registered on it as the agent does
// when MQTT is on, and sets one value of every series the agent sets, so
// that a gather shows each family's type.
func agentRegistry(t *testing.T) *metrics.Registry {
	t.Helper()
	reg, err := metrics.NewRegistry(metrics.Options{
		Site: docSite, Line: docLine, Host: docHost,
		Target: time.Millisecond, Window: 10 * time.Second,
		ProcRoot: "/proc", CycleCore: 0, Version: "v0.0.0", Revision: "0",
	})
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	pub, err := mqtt.New(mqtt.Config{Broker: "tcp://127.0.0.1:1", Scheme: mqtt.SchemeJSON, Root: "ecagent/site/host"})
	if err != nil {
		t.Fatalf("mqtt.New: %v", err)
	}
	t.Cleanup(func() { _ = pub.Close(0) })
	if err := reg.Register(pub.Collector()); err != nil {
		t.Fatal(err)
	}

	s := shm.Sample{Cycle: 1, Deadline: 1e9, Wake: 1e9 + 1e4, Send: 1e9 + 2e4, Recv: 1e9 + 3e4, End: 1e9 + 5e4, WKC: 3, ExpectedWKC: 3}
	reg.Consumer().Observe(&s)
	reg.Consumer().CloseWindow()
	reg.SetSlaves([]metrics.Slave{{Position: 0, Name: "EK1100"}, {Position: 1, Name: "AKD"}})
	reg.SetSlaveErrorCounters(0, "EK1100", metrics.ESCErrorCounters{})
	reg.CountEvent(contract.EventSlaveLost.String(), 1, "AKD")
	for _, e := range contract.Events() { // every event's own counter family
		if c := e.Counter; c.Stem != "" {
			reg.AddEventValue(e.Kind, c.LabelValues()[0], 2)
		}
	}
	reg.CycleProcessStarted(1)
	reg.SetRTSetting(metrics.RTSchedFIFO, true)
	if err := reg.SetRTCheck("preempt_rt", metrics.CheckPass); err != nil {
		t.Fatal(err)
	}
	reg.SetDC(metrics.DCSettings{Enabled: true, ReferencePosition: 1, Sync0Cycle: time.Millisecond})
	reg.Emergency(1, "AKD", 0x2310)
	reg.SetDriveState(1, "AKD", 8, "fault")
	reg.DriveFault(1, "AKD", 0x2310)
	return reg
}

// agentFamilies returns the ecagent_* families the agent's registry
// describes, sorted by name, with their types from a gather or, for a
// family that gathers nothing here, from metrics.Documented.
func agentFamilies(t *testing.T) []family {
	t.Helper()
	reg := agentRegistry(t)
	g := reg.Gatherer()
	c, ok := g.(prometheus.Collector)
	if !ok {
		t.Fatalf("the registry's Gatherer (%T) cannot describe its collectors", g)
	}
	gathered, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	types := map[string]string{}
	for _, mf := range gathered {
		types[mf.GetName()] = strings.ToLower(mf.GetType().String())
		if mf.GetType() == dto.MetricType_GAUGE_HISTOGRAM {
			types[mf.GetName()] = "gaugehistogram"
		}
	}
	documented := map[string]metrics.Series{}
	for _, s := range metrics.Documented() {
		documented[s.Name] = s
	}

	ch := make(chan *prometheus.Desc)
	go func() { c.Describe(ch); close(ch) }()
	var out []family
	seen := map[string]bool{}
	for d := range ch {
		f, err := parseDesc(d)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(f.name, "ecagent_") || seen[f.name] {
			continue // go_* and process_*: the client library's own
		}
		seen[f.name] = true
		f.typ = types[f.name]
		if doc, ok := documented[f.name]; ok {
			f.present = doc.Conditional
			if f.typ == "" {
				f.typ = string(doc.Type)
			}
		}
		if f.typ == "" {
			t.Fatalf("%s gathers nothing in the generator and is not in metrics.Documented: set a value of it in agentRegistry", f.name)
		}
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// unitOf names a family's unit from its name, as Prometheus' naming
// conventions put the base unit in the name.
func unitOf(name string) string {
	n := strings.TrimSuffix(name, "_total")
	switch {
	case strings.HasSuffix(n, "_seconds"):
		return "seconds"
	case strings.HasSuffix(n, "_ratio"):
		return "ratio (0–1)"
	case strings.HasSuffix(n, "_bytes"):
		return "bytes"
	}
	return "—"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

func codeList(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

// renderPrometheus renders the families as a Markdown table.
func renderPrometheus(fams []family) string {
	var fleet []string
	for i, f := range fams {
		if i == 0 {
			fleet = slices.Clone(f.constLabels)
			continue
		}
		fleet = slices.DeleteFunc(fleet, func(l string) bool { return !slices.Contains(f.constLabels, l) })
	}
	sort.Strings(fleet)
	var b strings.Builder
	fmt.Fprintf(&b, "%d families. Every one carries the fleet labels %s (from `site`, `line`, `host` of the configuration) besides the labels listed.\n\n",
		len(fams), codeList(fleet))
	b.WriteString("| name | type | unit | labels | help |\n|---|---|---|---|---|\n")
	for _, f := range fams {
		help := f.help
		if f.present != "" {
			help += " *Present " + f.present + ".*"
		}
		labels := slices.DeleteFunc(slices.Clone(f.constLabels), func(l string) bool { return slices.Contains(fleet, l) })
		labels = append(labels, f.labels...)
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", f.name, f.typ, unitOf(f.name), codeList(labels), cell(help))
	}
	return b.String()
}

// instrument is one OTLP metric as an export carries it.
type instrument struct {
	name, kind, unit, description string
	attributes                    []string
}

// otlpInstruments runs the OTLP exporter against a test receiver, feeds it
// what the agent feeds it (cycle samples, a closed window, the events of
// a drive) and returns the metrics the exports carried, sorted by name.
func otlpInstruments(t *testing.T) []instrument {
	t.Helper()
	for _, k := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE"} {
		t.Setenv(k, "")
	}
	rcv, err := otlptest.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	ctx := context.Background()
	exp, err := otlp.New(ctx, otlp.Options{Endpoint: rcv.URL(), Protocol: otlp.ProtocolHTTPProtobuf,
		Site: docSite, Line: docLine, Host: docHost, Version: "v0.0.0", Target: time.Millisecond, Interval: time.Hour})
	if err != nil {
		t.Fatalf("otlp.New: %v", err)
	}
	defer func() { _ = exp.Shutdown(ctx) }()
	reg := agentRegistry(t)
	for i := range 100 {
		deadline := int64(1e9 + i*1e6)
		s := shm.Sample{Cycle: uint64(i), Deadline: deadline, Wake: deadline + 1e4, Send: deadline + 2e4, Recv: deadline + 3e4,
			End: deadline + 5e4, WKC: 3, ExpectedWKC: 3, Flags: shm.SampleDCValid | shm.SampleCtlValid, DCDiff: 10, CtlErr: 20}
		exp.Observe(&s)
		reg.Consumer().Observe(&s)
	}
	exp.SetSegment(cyclestats.SegmentCounts{})
	exp.Window(reg.Consumer().CloseWindow())
	exp.Emergency(1, "AKD", 0x2310)
	exp.SetDriveState(1, "AKD", 8)
	exp.DriveFault(1, "AKD", 0x2310)
	if err := exp.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	byName := map[string]*instrument{}
	for _, e := range rcv.Exports() {
		for _, rm := range e.Request.GetResourceMetrics() {
			for _, sm := range rm.GetScopeMetrics() {
				for _, m := range sm.GetMetrics() {
					in := byName[m.GetName()]
					if in == nil {
						in = &instrument{name: m.GetName(), unit: m.GetUnit(), description: m.GetDescription()}
						byName[m.GetName()] = in
					}
					in.kind, in.attributes = otlpKind(m, in.attributes)
				}
			}
		}
	}
	if len(byName) == 0 {
		t.Fatal("the OTLP receiver got no metrics")
	}
	var out []instrument
	for _, in := range byName {
		sort.Strings(in.attributes)
		out = append(out, *in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// otlpKind names the data of m and adds its data points' attribute names
// to attrs.
func otlpKind(m *metricspb.Metric, attrs []string) (string, []string) {
	add := func(kvs []string) {
		for _, k := range kvs {
			if !slices.Contains(attrs, k) {
				attrs = append(attrs, k)
			}
		}
	}
	keys := func(a map[string]string) []string {
		var ks []string
		for k := range a {
			ks = append(ks, k)
		}
		return ks
	}
	switch d := m.GetData().(type) {
	case *metricspb.Metric_ExponentialHistogram:
		for _, p := range d.ExponentialHistogram.GetDataPoints() {
			add(keys(otlptest.Attributes(p.GetAttributes())))
		}
		return "exponential histogram", attrs
	case *metricspb.Metric_Histogram:
		for _, p := range d.Histogram.GetDataPoints() {
			add(keys(otlptest.Attributes(p.GetAttributes())))
		}
		return "histogram", attrs
	case *metricspb.Metric_Sum:
		for _, p := range d.Sum.GetDataPoints() {
			add(keys(otlptest.Attributes(p.GetAttributes())))
		}
		if d.Sum.GetIsMonotonic() {
			return "counter (monotonic sum)", attrs
		}
		return "up-down sum", attrs
	case *metricspb.Metric_Gauge:
		for _, p := range d.Gauge.GetDataPoints() {
			add(keys(otlptest.Attributes(p.GetAttributes())))
		}
		return "gauge", attrs
	}
	return "other", attrs
}

func renderOTLP(ins []instrument) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d instruments, from an export of the agent's OTLP exporter. The fleet labels are resource attributes (`site`, `line`, `host`, `host.name`, `service.name`, `service.version`), not data point attributes.\n\n", len(ins))
	b.WriteString("| name | kind | unit | attributes | description |\n|---|---|---|---|---|\n")
	for _, in := range ins {
		unit := in.unit
		if unit == "" {
			unit = "—"
		}
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s | %s |\n", in.name, in.kind, unit, codeList(in.attributes), cell(in.description))
	}
	return b.String()
}

func TestMetricsReference(t *testing.T) {
	fams := agentFamilies(t)
	for _, s := range metrics.Documented() {
		if !slices.ContainsFunc(fams, func(f family) bool { return f.name == s.Name }) {
			t.Errorf("%s is documented in metrics.Documented but the registry does not describe it", s.Name)
		}
	}
	checkGenerated(t, "metrics.md", "prometheus", renderPrometheus(fams))
	checkGenerated(t, "metrics.md", "otlp", renderOTLP(otlpInstruments(t)))
}

package dashboards

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/ethercat/cia402/state"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// committedDir is where the generated JSON is committed.
var committedDir = filepath.Join("..", "deploy", "grafana", "dashboards")

// TestCommittedJSONIsGenerated keeps deploy/grafana/dashboards in step with
// the code: the committed JSON must be what the builders produce.
func TestCommittedJSONIsGenerated(t *testing.T) {
	for _, d := range All() {
		t.Run(d.File, func(t *testing.T) {
			built, err := d.Build()
			if err != nil {
				t.Fatal(err)
			}
			got, err := JSON(built)
			if err != nil {
				t.Fatal(err)
			}
			testsupport.Golden(t, filepath.Join(committedDir, d.File), got)
		})
	}
}

// committed reads every committed dashboard.
func committed(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, d := range All() {
		b, err := os.ReadFile(filepath.Join(committedDir, d.File))
		if err != nil {
			t.Fatal(err)
		}
		out[d.File] = b
	}
	return out
}

// exported is every series name the agent exports: the documented families
// (histograms with their classic _bucket, _count and _sum series) and the
// MQTT publisher's series, which package mqtt documents itself
// (metrics.Registry.Register); those are checked against its source.
func exported(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	for _, s := range metrics.Documented() {
		known[s.Name] = true
		if s.Type == metrics.TypeHistogram {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				known[s.Name+suffix] = true
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "agent", "mqtt", "*.go"))
	var src strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, name := range MQTTSeries() {
		if strings.Contains(src.String(), `"`+name+`"`) {
			known[name] = true
		}
	}
	for name := range recorded(t) {
		known[name] = true
	}
	return known
}

// recorded is every series the shipped rules record
// (deploy/prometheus/ecagent.rules.yml), which the fleet dashboard reads.
func recorded(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "prometheus", "ecagent.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				out[r.Record] += " or " + r.Expr // a record may have several rules
			}
		}
	}
	return out
}

// TestQueriesReadExportedSeries parses every query of the committed
// dashboards as PromQL and requires every metric it names to be one the
// agent exports. A dashboard that queries a series the agent does not
// export fails here (and, against a running agent, in
// test/fleet_dashboards_test.go).
func TestQueriesReadExportedSeries(t *testing.T) {
	known := exported(t)
	rules := recorded(t)
	used := map[string]bool{}
	// use marks a series as shown, and what a recorded one is made of.
	var use func(n string)
	use = func(n string) {
		n = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_count"), "_sum")
		if used[n] {
			return
		}
		used[n] = true
		if expr, ok := rules[n]; ok {
			names, err := SelectedMetrics(strings.TrimPrefix(expr, " or "))
			if err != nil {
				t.Fatalf("rule %s: %v", n, err)
			}
			for _, m := range names {
				use(m)
			}
		}
	}
	for file, b := range committed(t) {
		qs, err := Queries(b)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(qs) < 10 {
			t.Errorf("%s: only %d queries found", file, len(qs))
		}
		for _, q := range qs {
			names, err := SelectedMetrics(q.Expr)
			if err != nil {
				t.Errorf("%s, %s: %v", file, q.Where, err)
				continue
			}
			for _, n := range names {
				use(n)
				if !known[n] {
					t.Errorf("%s, %s: reads %s, which the agent does not export", file, q.Where, n)
				}
			}
		}
	}
	// Every documented family has a place on a dashboard, unless it is
	// listed here with the reason.
	notShown := map[string]string{
		"ecagent_window_samples": "a consistency figure behind the window statistics, not an operating one",
	}
	for _, s := range metrics.Documented() {
		if !used[s.Name] && notShown[s.Name] == "" {
			t.Errorf("documented series %s is on no dashboard", s.Name)
		}
	}
}

// TestDashboardsShape checks what importing needs: a UID, the datasource,
// site, line and host variables, and every panel (and every query) reading the
// data source the datasource variable selects.
func TestDashboardsShape(t *testing.T) {
	for file, b := range committed(t) {
		var d struct {
			UID        string `json:"uid"`
			Title      string `json:"title"`
			Templating struct {
				List []struct {
					Name string `json:"name"`
				} `json:"list"`
			} `json:"templating"`
			Panels []json.RawMessage `json:"panels"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if d.UID == "" || d.Title == "" {
			t.Errorf("%s: uid %q, title %q", file, d.UID, d.Title)
		}
		var vars []string
		for _, v := range d.Templating.List {
			vars = append(vars, v.Name)
		}
		if !slices.Equal(vars, []string{"datasource", "site", "line", "host"}) {
			t.Errorf("%s: variables %v, want datasource, site, line, host", file, vars)
		}
		// The only data source named anywhere is the variable.
		if n, m := bytes.Count(b, []byte(`"datasource": {`)), bytes.Count(b, []byte(`"uid": "${datasource}"`)); n != m || n == 0 {
			t.Errorf("%s: %d data source references, %d of them to ${datasource}", file, n, m)
		}
	}
}

func TestQueriesFindsEveryTarget(t *testing.T) {
	doc := []byte(`{
	  "panels": [
	    {"type": "stat", "title": "a", "targets": [{"expr": "up"}]},
	    {"type": "row", "title": "r", "panels": [
	      {"type": "timeseries", "title": "b", "targets": [{"expr": "x"}, {"expr": "y"}]}
	    ]}
	  ],
	  "templating": {"list": [
	    {"type": "datasource", "name": "datasource", "query": "prometheus"},
	    {"type": "query", "name": "host", "query": "label_values(ecagent_build_info{site=~\"$site\"}, host)"}
	  ]},
	  "annotations": {"list": [
	    {"name": "Annotations & Alerts", "builtIn": 1},
	    {"name": "events", "expr": "increase(e_total[1m]) > 0"}
	  ]}
	}`)
	qs, err := Queries(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := []Query{
		{"panel a", "up"}, {"panel b", "x"}, {"panel b", "y"},
		{"variable host", `ecagent_build_info{site=~"$site"}`},
		{"annotation events", "increase(e_total[1m]) > 0"},
	}
	if !slices.Equal(qs, want) {
		t.Errorf("Queries = %v, want %v", qs, want)
	}
	if _, err := Queries([]byte(`{"panels": [{"title": "empty", "targets": [{"expr": " "}]}]}`)); err == nil {
		t.Error("a target without an expression is not reported")
	}
	if _, err := Queries([]byte(`[]`)); err == nil {
		t.Error("a JSON array is taken for a dashboard")
	}
}

func TestSelectedMetrics(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
		fail bool
	}{
		{expr: `rate(a_total{host=~"$host"}[$__rate_interval])`, want: []string{"a_total"}},
		{expr: `histogram_quantile(0.99, sum(rate(h[${__range}]))) or histogram_quantile(0.99, sum by (le) (rate(h_bucket{site="${site}"}[$__range])))`,
			want: []string{"h", "h_bucket"}},
		{expr: `max_over_time(g{stat="max"}[$__interval] offset 1w) / on() group_left() b`, want: []string{"g", "b"}},
		{expr: `vector(0)`, want: nil},
		{expr: `rate(a[5m]`, fail: true},
		{expr: `{__name__=~"ecagent_.*"}`, fail: true},
		{expr: `sum(a) by (`, fail: true},
	} {
		got, err := SelectedMetrics(tc.expr)
		if (err != nil) != tc.fail {
			t.Errorf("SelectedMetrics(%q) error %v, want failure %v", tc.expr, err, tc.fail)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("SelectedMetrics(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestExpandVariables(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`a{host=~"$host"}[$__rate_interval]`, `a{host=~"x"}[5m]`},
		{`a{site="${site}", host="${host:regex}"}[${__range}]`, `a{site="x", host="x"}[5m]`},
		{`a[$__interval]`, `a[5m]`},
		{`no variables`, `no variables`},
	} {
		if got := ExpandVariables(tc.in); got != tc.want {
			t.Errorf("ExpandVariables(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestProvisioning checks the Grafana provider file: a file provider whose
// path the README's install steps fill with every committed dashboard.
func TestProvisioning(t *testing.T) {
	path := filepath.Join("..", "deploy", "grafana", "provisioning", "dashboards", "ecagent.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Name    string `yaml:"name"`
			Type    string `yaml:"type"`
			Options struct {
				Path string `yaml:"path"`
			} `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if p.APIVersion != 1 || len(p.Providers) != 1 || p.Providers[0].Type != "file" || p.Providers[0].Options.Path == "" {
		t.Fatalf("%s: want apiVersion 1 and one file provider with a path, got %+v", path, p)
	}
	readme, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, []byte(p.Providers[0].Options.Path)) {
		t.Errorf("the README's install steps do not fill %s", p.Providers[0].Options.Path)
	}
	for _, d := range All() {
		if !bytes.Contains(readme, []byte(d.File)) {
			t.Errorf("the README does not mention %s", d.File)
		}
	}
}

// TestDriveStateMapping checks that the drive state panel names every
// CiA 402 state number as package ethercat/cia402/state does.
func TestDriveStateMapping(t *testing.T) {
	m := driveStateNames()
	if len(m) != 1 || m[0].ValueMap == nil {
		t.Fatalf("want one value map, got %+v", m)
	}
	opts := m[0].ValueMap.Options
	if len(opts) != int(state.Fault)+1 {
		t.Errorf("%d states mapped, want %d", len(opts), int(state.Fault)+1)
	}
	for s := state.Unknown; s <= state.Fault; s++ {
		o, ok := opts[strconv.Itoa(int(s))]
		if !ok || o.Text == nil || *o.Text != s.String() {
			t.Errorf("state %d maps to %+v, want %q", s, o, s.String())
		}
	}
}

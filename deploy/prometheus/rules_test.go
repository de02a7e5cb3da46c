// Package prometheus holds no code: its tests check the Prometheus rules
// beside them. promtool (3.x for the native-histogram tests) checks and
// unit-tests the rules; the Go tests check what promtool cannot: that
// every alert is tested firing and quiet, has a runbook section, and that
// every series the rules read is one the agent exports.
package prometheus

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"

	"github.com/ecagent/ecagent/agent/metrics"
)

// The files under test.
const (
	rulesFile     = "ecagent.rules.yml"
	siteRulesFile = "ecagent-site.rules.yml"
	configFile    = "prometheus.yml"
	agentFile     = "agent.yml"
	runbookFile   = "RUNBOOK.md"
	testsGlob     = "tests/*.test.yml"
	// nativeTests are the test files that need promtool 3.x, whose series
	// notation has native histograms.
	nativeTests = "jitter-native.test.yml regression.test.yml dc-native.test.yml line-regression.test.yml"
	// promtoolModule is what .ci/run installs.
	promtoolModule = "github.com/prometheus/prometheus/cmd/promtool@v0.316.0"
)

// promtool finds promtool: $PROMTOOL, then $(go env GOPATH)/bin, then
// $PATH. major is 2 for a 2.x build (Debian's), 3 otherwise; a build from
// `go install` reports no version and is taken for the module it was
// installed from (3.x). It skips the test when there is none.
func promtool(t *testing.T) (path string, major int) {
	t.Helper()
	var candidates []string
	if p := os.Getenv("PROMTOOL"); p != "" {
		candidates = append(candidates, p)
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		candidates = append(candidates, filepath.Join(strings.TrimSpace(string(out)), "bin", "promtool"))
	}
	if p, err := exec.LookPath("promtool"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		out, err := exec.Command(c, "--version").CombinedOutput()
		if err != nil {
			continue
		}
		if regexp.MustCompile(`version 2\.`).Match(out) {
			// Keep looking for a 3.x build, but remember this one.
			if path == "" {
				path, major = c, 2
			}
			continue
		}
		return c, 3
	}
	if path == "" {
		t.Skipf("promtool not found (PROMTOOL, GOPATH/bin, PATH): go install %s", promtoolModule)
	}
	return path, major
}

func runPromtool(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), bytes.TrimSpace(out))
}

func TestPromtoolCheck(t *testing.T) {
	bin, _ := promtool(t)
	runPromtool(t, bin, "check", "rules", rulesFile, siteRulesFile)
	runPromtool(t, bin, "check", "config", configFile)
	runPromtool(t, bin, "check", "config", "--agent", agentFile)
}

func TestPromtoolTestRules(t *testing.T) {
	bin, major := promtool(t)
	files, err := filepath.Glob(testsGlob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files %s: %v", testsGlob, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if major < 3 && slices.Contains(strings.Fields(nativeTests), filepath.Base(f)) {
				t.Skipf("%s is promtool 2.x, which has no native-histogram series notation: go install %s", bin, promtoolModule)
			}
			runPromtool(t, bin, "test", "rules", f)
		})
	}
}

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []rule `yaml:"rules"`
	} `yaml:"groups"`
}

type rule struct {
	Record      string            `yaml:"record"`
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// unitTestFile is the part of a promtool test file the tests read.
type unitTestFile struct {
	Tests []struct {
		Name        string `yaml:"name"`
		InputSeries []struct {
			Series string `yaml:"series"`
			Values string `yaml:"values"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func rules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	readYAML(t, rulesFile, &f)
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rules", rulesFile)
	}
	return out
}

// TestEveryAlertIsTested requires each alert to be tested firing and quiet
// by promtool, and each alert over the jitter or distributed-clock
// histograms to fire over both classic and native histograms.
func TestEveryAlertIsTested(t *testing.T) {
	files, _ := filepath.Glob(testsGlob)
	fires := map[string][]string{} // alert → where it fires (file, and c-/n- host for regression)
	quiet := map[string]bool{}
	for _, f := range files {
		var u unitTestFile
		readYAML(t, f, &u)
		for _, tg := range u.Tests {
			for _, at := range tg.AlertRuleTest {
				if len(at.ExpAlerts) == 0 {
					quiet[at.Alertname] = true
				}
				for _, a := range at.ExpAlerts {
					where := filepath.Base(f)
					if h := a.ExpLabels["host"]; strings.HasPrefix(h, "c-") || strings.HasPrefix(h, "n-") {
						where += ":" + h[:1] // regression.test.yml hosts say classic or native
					}
					fires[at.Alertname] = append(fires[at.Alertname], where)
				}
			}
		}
	}
	for _, r := range rules(t) {
		if r.Alert == "" {
			continue
		}
		if len(fires[r.Alert]) == 0 {
			t.Errorf("alert %s is never tested firing", r.Alert)
		}
		if !quiet[r.Alert] {
			t.Errorf("alert %s is never tested quiet", r.Alert)
		}
		w := fires[r.Alert]
		switch {
		case slices.Contains(w, "jitter-classic.test.yml") != slices.Contains(w, "jitter-native.test.yml"):
			t.Errorf("alert %s fires over only one kind of histogram: %v", r.Alert, w)
		case slices.Contains(w, "regression.test.yml:c") != slices.Contains(w, "regression.test.yml:n"):
			t.Errorf("alert %s fires over only one kind of histogram: %v", r.Alert, w)
		case strings.HasPrefix(r.Alert, "EcagentDC") &&
			(!slices.Contains(w, "dc-drives.test.yml") || !slices.Contains(w, "dc-native.test.yml")):
			t.Errorf("distributed-clock alert %s must fire over classic (dc-drives.test.yml) and native (dc-native.test.yml) histograms: %v", r.Alert, w)
		}
	}
}

// TestAlertsHaveRunbooks checks severity, summary, description and a
// runbook_url that points at a section of RUNBOOK.md.
func TestAlertsHaveRunbooks(t *testing.T) {
	book, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(book), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[githubAnchor(h)] = true
		}
	}
	const prefix = "https://github.com/ecagent/ecagent/blob/main/deploy/prometheus/RUNBOOK.md#"
	for _, r := range rules(t) {
		if r.Alert == "" {
			continue
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("alert %s: severity %q, want critical or warning", r.Alert, s)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("alert %s has no %s", r.Alert, a)
			}
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], prefix)
		if !ok || !anchors[anchor] {
			t.Errorf("alert %s: runbook_url %q is not %s<a section of %s>", r.Alert, r.Annotations["runbook_url"], prefix, runbookFile)
		}
	}
}

// githubAnchor is the anchor GitHub gives a Markdown heading.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// mqttSeries are the MQTT publisher's series the rules read. Package mqtt
// documents them itself (metrics.Registry.Register: "its series are its
// own to document"), so they are checked against its source.
var mqttSeries = []string{"ecagent_mqtt_messages_buffered", "ecagent_mqtt_messages_dropped_total"}

// TestRulesReadExportedSeries parses every expression with the PromQL
// parser and checks each series it selects: a family of
// metrics.Documented() (histograms with their classic _bucket, _count and
// _sum series), a series these rules record, a per-site parameter of
// ecagent-site.rules.yml, Prometheus's own `up`, or an MQTT series package
// mqtt exports.
func TestRulesReadExportedSeries(t *testing.T) {
	known := map[string]bool{"up": true}
	for _, s := range metrics.Documented() {
		known[s.Name] = true
		if s.Type == metrics.TypeHistogram {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				known[s.Name+suffix] = true
			}
		}
	}
	rs := rules(t)
	for _, r := range rs {
		if r.Record != "" {
			known[r.Record] = true
		}
	}
	site, err := os.ReadFile(siteRulesFile)
	if err != nil {
		t.Fatal(err)
	}
	mqttSource := readGoSources(t, filepath.Join("..", "..", "agent", "mqtt"))
	for _, name := range mqttSeries {
		if strings.Contains(mqttSource, `"`+name+`"`) {
			known[name] = true
		}
	}

	p := parser.NewParser(parser.Options{})
	for _, r := range rs {
		id := r.Record + r.Alert
		expr, err := p.ParseExpr(r.Expr)
		if err != nil {
			t.Errorf("%s: %v", id, err)
			continue
		}
		for _, name := range selectedNames(expr) {
			switch {
			case known[name]:
			case strings.HasPrefix(name, "ecagent_site:") && bytes.Contains(site, []byte("record: "+name)):
			default:
				t.Errorf("%s reads %s, which the agent does not export (not in metrics.Documented, not recorded here)", id, name)
			}
		}
	}
}

// selectedNames returns the metric names an expression selects.
func selectedNames(expr parser.Expr) []string {
	var names []string
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok && vs.Name != "" {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

// readGoSources concatenates the non-test Go files of a directory ("" if
// it does not exist).
func readGoSources(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var b strings.Builder
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\n", src)
	}
	return b.String()
}

package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ecagent/ecagent/agent/metrics"
	"github.com/ecagent/ecagent/dashboards"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// startFleetAgent runs `ecagent sim` on one end of a veth pair and
// `ecagent run` on the other, with its metrics endpoint on a free loopback
// port, the cycle pinned to CPU 1 (so the per-core series exist), 1 s
// windows and MQTT on an embedded broker of its own. It returns the
// metrics address once two windows have closed.
func startFleetAgent(t *testing.T, tag string, extra ...string) (addr string, a *agentProc) {
	t.Helper()
	w := newWire(t, tag)
	// Every 20th answer 3 ms late once the test sends SIGUSR1: lost frames.
	simProc := startSim(t, w, strings.Join(referenceSet, ","), "--delay", "3ms", "--delay-every", "20", "--delay-on-signal")
	addr = testsupport.FreeAddr(t)
	args := append([]string{"--bus.interface", w.MasterEnd,
		"--cycle.shm", fmt.Sprintf("/dev/shm/ecagent-%s-%d.shm", tag, os.Getpid()),
		"--cycle.core", "1", "--status.interval", "0",
		"--metrics.listen", addr, "--metrics.window", "1s",
		"--mqtt.embedded", testsupport.FreeAddr(t)}, extra...)
	a = startAgent(t, args...)
	a.sim = simProc
	stopAtCleanup(t, a.cmd, "agent", a.log)
	a.waitLog(t, "cycle started", 30*time.Second)
	time.Sleep(2200 * time.Millisecond) // two windows closed, /proc/stat advanced
	return addr, a
}

// scrapedNames is every series name of a scrape: the family names, and
// for histograms their classic _bucket, _count and _sum series.
func scrapedNames(fams map[string]*dto) map[string]bool {
	names := map[string]bool{}
	for name, f := range fams {
		names[name] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				names[name+suffix] = true
			}
		}
	}
	return names
}

// absentByDesign are documented families a running agent of this version
// does not export, with the reason; a query may name them.
func absentByDesign(name string) (string, bool) {
	for _, s := range metrics.Documented() {
		if s.Name != name {
			continue
		}
		switch {
		case strings.Contains(s.Conditional, "always with metrics.detail full"):
			return "a zero the standard detail leaves out (" + s.Conditional + ")", true
		case strings.Contains(s.Conditional, "error counters"):
			return "the agent does not read the slaves' ESC error counters yet (" + s.Conditional + ")", true
		case strings.Contains(s.Conditional, "CoE emergency"), strings.Contains(s.Conditional, "CiA 402 drive"):
			return "the reference set has no drive (" + s.Conditional + "; TestServoDemo covers it)", true
		}
	}
	return "", false
}

// TestDashboardsQueryWhatTheAgentExports scrapes a running agent and
// requires every metric named by a query of the committed Grafana
// dashboards, and every series the Prometheus rules read, to be in the
// scrape. It also runs `promtool check metrics` on the scrape when promtool
// is installed.
func TestDashboardsQueryWhatTheAgentExports(t *testing.T) {
	addr, _ := startFleetAgent(t, "fdb")
	scraped := scrapedNames(scrape(t, addr))

	check := func(where, name string) {
		t.Helper()
		if scraped[name] {
			return
		}
		if why, ok := absentByDesign(name); ok {
			t.Logf("%s reads %s, absent: %s", where, name, why)
			return
		}
		t.Errorf("%s reads %s, which the running agent does not export", where, name)
	}

	rules := ruleExpressions(t)
	recorded := rules[0].recorded // the fleet overview reads what the rules record
	for _, d := range dashboards.All() {
		qs := committedQueries(t, d.File)
		n := 0
		for _, q := range qs {
			names, err := dashboards.SelectedMetrics(q.Expr)
			if err != nil {
				t.Errorf("%s, %s: %v", d.File, q.Where, err)
			}
			for _, name := range names {
				if recorded[name] {
					continue // checked below, with the rules that record it
				}
				check(d.File+", "+q.Where, name)
				n++
			}
		}
		t.Logf("%s: %d queries, %d metric references checked", d.File, len(qs), n)
	}

	for _, r := range rules {
		names, err := dashboards.SelectedMetrics(r.expr)
		if err != nil {
			t.Errorf("rule %s: %v", r.name, err)
		}
		for _, name := range names {
			if r.recorded[name] || name == "up" || strings.HasPrefix(name, "ecagent_site:") {
				continue // recorded by the rules, Prometheus's own, or a site parameter
			}
			check("rule "+r.name, name)
		}
	}

	if promtool := findPromtool(); promtool != "" {
		text := scrapeText(t, addr)
		cmd := exec.Command(promtool, "check", "metrics")
		cmd.Stdin = strings.NewReader(text)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool check metrics on the scrape: %v\n%s", err, out)
		}
	} else {
		t.Log("promtool not installed: promtool check metrics skipped")
	}
}

// ruleExpression is one expression of deploy/prometheus/ecagent.rules.yml.
type ruleExpression struct {
	name, expr string
	recorded   map[string]bool // every name the rules record
}

func ruleExpressions(t *testing.T) []ruleExpression {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "prometheus", "ecagent.rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
				Alert  string `yaml:"alert"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	var out []ruleExpression
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				recorded[r.Record] = true
			}
			out = append(out, ruleExpression{name: r.Record + r.Alert, expr: r.Expr, recorded: recorded})
		}
	}
	if len(out) == 0 {
		t.Fatal("no rules")
	}
	return out
}

// findPromtool returns promtool from $(go env GOPATH)/bin or $PATH, "" if
// there is none.
func findPromtool() string {
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "promtool")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath("promtool")
	return p
}

// scrapeText fetches /metrics in the text format, unparsed.
func scrapeText(t *testing.T, addr string) string {
	t.Helper()
	resp := getMetrics(t, addr)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s, %v", resp.Status, err)
	}
	return string(b)
}

// committedQueries returns the queries of the committed dashboard file
// (deploy/grafana/dashboards).
func committedQueries(t *testing.T, file string) []dashboards.Query {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "deploy", "grafana", "dashboards", file))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := dashboards.Queries(b)
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

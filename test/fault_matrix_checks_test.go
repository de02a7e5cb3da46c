package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// waitEvent waits until the agent counted one more bus event of kind (at
// position, when not empty) than in before.
func waitEvent(t *testing.T, r *faultRig, before map[string]*dto, kind, position string, within time.Duration) map[string]*dto {
	t.Helper()
	l := map[string]string{"kind": kind}
	if position != "" {
		l["position"] = position
	}
	n := counter(before, "ecagent_bus_events_total", l)
	return r.waitFor(t, "a "+kind+" event at position "+position, within, func(f map[string]*dto) bool {
		return counter(f, "ecagent_bus_events_total", l) > n
	})
}

// checkMetrics checks the slave series of a scrape against the row.
func checkMetrics(t *testing.T, fams map[string]*dto, row *matrixRow) {
	t.Helper()
	for _, m := range metricsMismatches(fams, row) {
		t.Error(m)
	}
}

// metricsMismatches says where the slaves' series in fams differ from
// what row wants.
func metricsMismatches(fams map[string]*dto, row *matrixRow) []string {
	var out []string
	for pos := range referenceSet {
		w := row.want(pos)
		p := map[string]string{"position": fmt.Sprint(pos)}
		with := func(k, v string) map[string]string { return map[string]string{"position": p["position"], k: v} }
		got := slaveWant{
			up: counter(fams, "ecagent_slave_up", p), al: counter(fams, "ecagent_slave_al_state", p),
		}
		for _, v := range []string{"present", "lost", "refused", "reconnecting"} {
			if counter(fams, "ecagent_slave_presence", with("presence", v)) == 1 {
				got.presence = v
			}
		}
		for _, v := range []string{"good", "stale", "invalid"} {
			if counter(fams, "ecagent_slave_data_quality", with("quality", v)) == 1 {
				got.quality = v
			}
		}
		if got != w {
			out = append(out, fmt.Sprintf("metrics: slave %d is up=%v al_state=%v presence=%s quality=%s, want up=%v al_state=%v presence=%s quality=%s",
				pos, got.up, got.al, got.presence, got.quality, w.up, w.al, w.presence, w.quality))
		}
	}
	return out
}

// settleMetrics returns the first scrape from fams on whose slaves
// checkMetrics finds nothing wrong, or within 3 s the last one taken.
func settleMetrics(t *testing.T, r *faultRig, fams map[string]*dto, row *matrixRow) map[string]*dto {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); ; {
		if len(metricsMismatches(fams, row)) == 0 || time.Now().After(deadline) {
			return fams
		}
		t.Logf("metrics not yet as the fault makes them (a loss of the host's own?): scraping again")
		time.Sleep(50 * time.Millisecond)
		fams = r.scrape(t)
	}
}

// settleReady waits up to 3 s for /readyz to say ready.
func settleReady(t *testing.T, r *faultRig) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Second); !r.ready() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
}

// checkReadyz checks /readyz: 200 when want is empty, else 503 with want
// in its body.
func checkReadyz(t *testing.T, r *faultRig, want string) {
	t.Helper()
	resp, err := r.scraper.Get("http://" + r.addr + "/readyz")
	if err != nil {
		t.Fatalf("/readyz: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	switch {
	case want == "" && resp.StatusCode != http.StatusOK:
		t.Errorf("/readyz %d %q, want 200; agent log:\n%s", resp.StatusCode, body, tail(r.a.log(), 25))
	case want != "" && (resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), want)):
		t.Errorf("/readyz %d %q, want 503 saying %q; agent log:\n%s", resp.StatusCode, body, want, tail(r.a.log(), 25))
	}
}

// alertSeries are the families the state alerts read; checkAlerts feeds
// them to promtool as they were scraped.
var alertSeries = []string{"ecagent_slave_up", "ecagent_slave_al_state", "ecagent_slave_al_error",
	"ecagent_slave_al_status_code", "ecagent_slave_presence", "ecagent_slave_data_quality", "ecagent_cycle_process_up"}

// checkAlerts evaluates the project's alert rules with promtool on the
// scraped state held for 15 minutes, and checks which alerts fire.
func checkAlerts(t *testing.T, promtool string, fams map[string]*dto, want []string) {
	t.Helper()
	var input strings.Builder
	input.WriteString("      - series: 'up{job=\"ecagent\",site=\"s\",line=\"l\",host=\"h\"}'\n        values: '1x20'\n")
	for _, name := range alertSeries {
		f := fams[name]
		if f == nil {
			continue
		}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			fmt.Fprintf(&input, "      - series: '%s{%s}'\n        values: '%vx20'\n", name, strings.Join(labels, ","), m.GetGauge().GetValue())
		}
	}
	sort.Strings(want)
	var exp strings.Builder
	if len(want) == 0 {
		exp.WriteString("        exp_samples: []\n")
	} else {
		exp.WriteString("        exp_samples:\n")
		for _, a := range want {
			fmt.Fprintf(&exp, "          - labels: '{alertname=%q}'\n            value: 1\n", a)
		}
	}
	rules, err := filepath.Abs("../deploy/prometheus/ecagent.rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	test := fmt.Sprintf(`rule_files: [%q]
evaluation_interval: 1m
tests:
  - interval: 1m
    input_series:
%s    promql_expr_test:
      - expr: group by (alertname) (ALERTS{alertstate="firing"})
        eval_time: 15m
%s`, rules, input.String(), exp.String())
	path := filepath.Join(t.TempDir(), "matrix.test.yml")
	if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput()
	if err != nil {
		t.Errorf("alerts: want exactly %v firing on this state; promtool: %v\n%s", want, err, out)
	}
}

// promtoolPath finds promtool 3.x (the Go module build in GOPATH/bin, or
// on PATH).
func promtoolPath(t *testing.T) string {
	t.Helper()
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "promtool")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not found (.ci/run builds it)")
	}
	return p
}

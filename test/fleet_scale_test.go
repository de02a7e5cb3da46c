package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestFleetOnRealEngines runs scripts/fleet-bench with 50 emulated agents
// through the real engines — Prometheus (Debian's 2.x) in agent mode
// scraping 38 of them and remote-writing, the OpenTelemetry Collector
// receiving the other 12's OTLP pushes, two Thanos receivers on one
// hashring, Thanos query, Thanos rule evaluating the shipped rules — and
// requires:
//
//   - both paths to arrive in the store: scraped series and OTLP series
//     (exponential histograms stored as native histograms);
//   - every injected regression alerted (three lone hosts, one of them
//     pushing OTLP, by EcagentJitterP99Regressed; one whole line by
//     EcagentLineJitterRegressed) and no alert for any other host or line;
//   - every rule evaluating without error and every fleet dashboard query
//     answering.
//
// The time scale of the regression rules is compressed (an hour becomes a
// sixth of the run, a week half of it): the first 40 % of the run is the
// hosts' "last week".
func TestFleetOnRealEngines(t *testing.T) {
	needRoot(t)
	for _, name := range []string{"prometheus", "thanos", "otelcol-ecagent"} {
		if findEngine(name) == "" {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not found (GOPATH/bin, PATH): .ci/run builds it with scripts/engines", name)
			}
			t.Skipf("%s not found (GOPATH/bin, PATH): run scripts/engines", name)
		}
	}
	bin := filepath.Join(t.TempDir(), "fleet-bench")
	if out, err := exec.Command("go", "build", "-o", bin, "../scripts/fleet-bench").CombinedOutput(); err != nil {
		t.Fatalf("building fleet-bench: %v\n%s", err, out)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	start := time.Now()
	cmd := exec.Command(bin, "--hosts", "50", "--hosts-per-line", "5", "--duration", "80s",
		"--scrape-interval", "2s", "--eval-interval", "2s", "--query-repeats", "1", "--query-range", "10m",
		"--rate", "100", "--json", report)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("fleet-bench (%.0f s):\n%s", time.Since(start).Seconds(), stdout.String())
	if err != nil {
		t.Fatalf("fleet-bench: %v\n%s", err, stderr.String())
	}
	var r struct {
		Scraped     int      `json:"scraped"`
		Pushed      int      `json:"pushed_otlp"`
		Series      float64  `json:"series_in_store"`
		OTLP        float64  `json:"otlp_series_in_store"`
		Ingest      float64  `json:"ingest_samples_per_s"`
		Injected    []string `json:"injected"`
		Alerted     []string `json:"alerted"`
		False       []string `json:"false_alerts"`
		LineHosts   []string `json:"line_host_alerts"`
		QueryErrors []string `json:"query_errors"`
		RuleErrors  []string `json:"rule_errors"`
		Queries     int      `json:"queries"`
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Scraped == 0 || r.Pushed == 0 {
		t.Fatalf("%d hosts scraped, %d pushing: the test needs both paths", r.Scraped, r.Pushed)
	}
	if r.OTLP == 0 {
		t.Errorf("no series from the OTLP path in the store (%0.f series in all)", r.Series)
	}
	if r.Series <= r.OTLP {
		t.Errorf("no scraped series in the store (%0.f series, %0.f from OTLP)", r.Series, r.OTLP)
	}
	if r.Ingest <= 0 {
		t.Errorf("the store appended %.0f samples/s", r.Ingest)
	}
	if len(r.Injected) < 2 || len(r.Alerted) != len(r.Injected) {
		t.Errorf("injected %v, alerted %v: want every injected regression alerted", r.Injected, r.Alerted)
	}
	if len(r.False) > 0 {
		t.Errorf("false alerts (hosts that did not change): %v", r.False)
	}
	if len(r.LineHosts) > 0 {
		// They did change: their line's alert took them in an evaluation
		// or two later. Said, not failed.
		t.Logf("hosts of the regressed line paged before their line: %v", r.LineHosts)
	}
	for _, e := range r.RuleErrors {
		t.Errorf("rule error: %s", e)
	}
	for _, e := range r.QueryErrors {
		t.Errorf("dashboard query error: %s", e)
	}
	if r.Queries < 10 {
		t.Errorf("%d fleet dashboard queries timed", r.Queries)
	}
	// The summary line is the last line, in the documented form.
	var last string
	sc := bufio.NewScanner(strings.NewReader(stdout.String()))
	for sc.Scan() {
		last = sc.Text()
	}
	if !regexp.MustCompile(`^fleet: 50 hosts, \d+ series/host, [\d.]+ KB gzip/scrape, ingest \d+ samples/s, query p99 \d+ ms \(panel .+\), regressions alerted \d+ of \d+, false alerts \d+$`).MatchString(last) {
		t.Errorf("last line %q is not the documented summary", last)
	}
}

// findEngine finds an engine's binary in $(go env GOPATH)/bin or $PATH.
func findEngine(name string) string {
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, _ := exec.LookPath(name)
	return p
}

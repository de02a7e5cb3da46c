package test

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// The series budget of one agent on the reference segment (7 slaves) at
// the default metrics.detail (docs/deployment.md, "Sizing"): a fleet
// planner multiplies these by the number of hosts.
const (
	maxSeriesPerAgent   = 400
	maxScrapeGzipBytes  = 8 << 10
	maxScrapeProtoBytes = 96 << 10
	maxSeriesPerSlave   = 6 // each slave beyond the first
)

// scrapeSize is what one scrape of an agent costs.
type scrapeSize struct {
	series, ecagent             int
	events                      int // of them ecagent_bus_events_total: what faults so far counted
	text, gzip, openMetricsGzip int
	proto, protoGzip            int
}

// TestFleetSizing runs an agent on the built-in simulated reference
// segment and one on a single slave, and measures what a fleet planner
// needs per agent: series per scrape and per slave, bytes per scrape in
// each exposition format (gzip as Prometheus asks for it), and MQTT
// messages per second at the default publish interval. It fails past the
// budgets, and when docs/deployment.md's generated sizing table drifts
// from the measurement (-update rewrites it).
func TestFleetSizing(t *testing.T) {
	ref, mqttRate := measureScrape(t, true)
	one, _ := measureScrape(t, false, "--bus.devices", "EK1100")
	// What a slave costs in steady state: the bus events counted so far
	// (a frame lost under load, a slave found again) come with faults.
	perSlave := float64((ref.series-ref.events)-(one.series-one.events)) / 6

	t.Logf("per agent (reference segment, 7 slaves, 1 ms cycle, mqtt.interval 100ms, metrics.detail standard):")
	t.Logf("  series per scrape (classic buckets, text format): %d, of them ecagent_*: %d; one slave: %d, so %.1f per slave beyond the first",
		ref.series, ref.ecagent, one.series, perSlave)
	t.Logf("  bytes per scrape: text %d (gzip %d), OpenMetrics gzip %d, protobuf with native histograms %d (gzip %d)",
		ref.text, ref.gzip, ref.openMetricsGzip, ref.proto, ref.protoGzip)
	t.Logf("  MQTT messages per second: %.1f", mqttRate)

	if ref.series > maxSeriesPerAgent {
		t.Errorf("%d series per agent, budget %d", ref.series, maxSeriesPerAgent)
	}
	if perSlave > maxSeriesPerSlave {
		t.Errorf("%.1f series per slave beyond the first (%d with 7 slaves, %d with 1), budget %d", perSlave, ref.series, one.series, maxSeriesPerSlave)
	}
	if ref.gzip > maxScrapeGzipBytes || ref.proto > maxScrapeProtoBytes {
		t.Errorf("scrape of %d bytes gzip / %d protobuf, budget %d / %d", ref.gzip, ref.proto, maxScrapeGzipBytes, maxScrapeProtoBytes)
	}
	if mqttRate <= 0 {
		t.Errorf("no MQTT messages published")
	}
	checkSizingDoc(t, ref, one, perSlave, mqttRate)
}

// measureScrape starts an agent on the built-in segment with args and
// measures one scrape once every window family has a value; withMQTT also
// measures the MQTT message rate over 5 s.
func measureScrape(t *testing.T, withMQTT bool, args ...string) (scrapeSize, float64) {
	t.Helper()
	addr := testsupport.FreeAddr(t)
	shm := fmt.Sprintf("/dev/shm/ecagent-sizing-%d-%d.shm", os.Getpid(), len(args))
	cmd := exec.Command(ecagentBinary(t), append([]string{"run", "--cycle.shm", shm, "--status.interval", "0",
		"--metrics.listen", addr, "--metrics.window", "1s", "--mqtt.embedded", "127.0.0.1:0"}, args...)...)
	a := startProcess(t, cmd)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log())
		}
	}()
	deadline := time.Now().Add(60 * time.Second)
	for !ready(addr) || !windowsClosed(t, addr) {
		if time.Now().After(deadline) || closed(exited) {
			t.Fatalf("the agent did not become ready with its windows closed:\n%s", a.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	text := fetch(t, addr, "text/plain; version=0.0.4", false)
	sz := scrapeSize{
		text:            len(text),
		gzip:            len(fetch(t, addr, "text/plain; version=0.0.4", true)),
		openMetricsGzip: len(fetch(t, addr, "application/openmetrics-text; version=1.0.0", true)),
		proto:           len(fetch(t, addr, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", false)),
		protoGzip:       len(fetch(t, addr, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", true)),
	}
	for _, line := range strings.Split(string(text), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		sz.series++
		if strings.HasPrefix(line, "ecagent_") {
			sz.ecagent++
		}
		if strings.HasPrefix(line, "ecagent_bus_events_total{") {
			sz.events++
		}
	}
	if !withMQTT {
		return sz, 0
	}
	published := func() float64 {
		fams := scrape(t, addr)
		f := fams["ecagent_mqtt_messages_published_total"]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Fatal("no ecagent_mqtt_messages_published_total")
		}
		return f.GetMetric()[0].GetCounter().GetValue()
	}
	p0, t0 := published(), time.Now()
	for time.Since(t0) < 5*time.Second {
		time.Sleep(100 * time.Millisecond) // a rate over a fixed span: nothing to wait for
	}
	p1, t1 := published(), time.Now()
	return sz, (p1 - p0) / t1.Sub(t0).Seconds()
}

// windowsClosed reports whether the first statistics window has closed:
// the cycle period's window has samples (quantities such as the DC ones
// may have none on a segment without them).
func windowsClosed(t *testing.T, addr string) bool {
	f := scrape(t, addr)["ecagent_window_samples"]
	if f == nil {
		return false
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "quantity" && l.GetValue() == "cycle_period" {
				return m.GetGauge().GetValue() > 0
			}
		}
	}
	return false
}

// checkSizingDoc compares docs/deployment.md's generated sizing table with
// the measurement: the series within 3 % (per slave within 0.5), the bytes within 15 %
// (values print with varying lengths), and rewrites it under -update.
func checkSizingDoc(t *testing.T, ref, one scrapeSize, perSlave, mqttRate float64) {
	const path, begin, end = "../docs/deployment.md", "<!-- sizing:begin (TestFleetSizing -update) -->", "<!-- sizing:end -->"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(string(doc), begin), strings.Index(string(doc), end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the generated sizing table between %q and %q", path, begin, end)
	}
	kb := func(n int) string { return fmt.Sprintf("%.1f KB", float64(n)/1000) }
	table := fmt.Sprintf(`
  | per agent | measured |
  |---|---|
  | series per scrape (text format, classic buckets) | %d (%d `+"`ecagent_*`"+`) |
  | series per slave beyond the first | %.1f (%d with one slave) |
  | bytes per scrape, text / gzip | %s / %s |
  | bytes per scrape, OpenMetrics gzip | %s |
  | bytes per scrape, protobuf with native histograms / gzip | %s / %s |
  | MQTT messages per second | %.0f |
`, ref.series, ref.ecagent, perSlave, one.series, kb(ref.text), kb(ref.gzip), kb(ref.openMetricsGzip), kb(ref.proto), kb(ref.protoGzip), mqttRate)
	if testsupport.Update() {
		doc = []byte(string(doc[:i+len(begin)]) + table + string(doc[j:]))
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	var docSeries, docEcagent, docOne int
	var docPerSlave, docText, docGzip float64
	body := string(doc[i+len(begin) : j])
	if _, err := fmt.Sscanf(body[strings.Index(body, "| series per scrape"):], "| series per scrape (text format, classic buckets) | %d (%d", &docSeries, &docEcagent); err != nil {
		t.Fatalf("%s: the sizing table's series row does not parse (%v): run go test ./test -run TestFleetSizing -update", path, err)
	}
	if _, err := fmt.Sscanf(body[strings.Index(body, "| series per slave"):], "| series per slave beyond the first | %g (%d", &docPerSlave, &docOne); err != nil {
		t.Fatalf("%s: the per-slave row does not parse (%v)", path, err)
	}
	if _, err := fmt.Sscanf(body[strings.Index(body, "| bytes per scrape, text"):], "| bytes per scrape, text / gzip | %g KB / %g KB", &docText, &docGzip); err != nil {
		t.Fatalf("%s: the bytes row does not parse (%v)", path, err)
	}
	off := func(doc, got float64, tol float64) bool { return got < doc*(1-tol) || got > doc*(1+tol) }
	if off(float64(docSeries), float64(ref.series), 0.03) || off(float64(docEcagent), float64(ref.ecagent), 0.03) ||
		// Per slave by an absolute half: two series more in one run (an
		// event counted under load) move a difference over six slaves by 0.33.
		math.Abs(docPerSlave-perSlave) > 0.5 || off(docGzip*1000, float64(ref.gzip), 0.15) || off(docText*1000, float64(ref.text), 0.15) {
		t.Errorf("%s's sizing table drifted from the measurement:\n%s\nmeasured:%s\nrun go test ./test -run TestFleetSizing -update", path, body, table)
	}
}

// fetch returns the body of /metrics as sent on the wire: compressed when
// gzip is asked for.
func fetch(t *testing.T, addr, accept string, gzip bool) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", accept)
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if gzip && resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("asked for gzip, got Content-Encoding %q", resp.Header.Get("Content-Encoding"))
	}
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, strings.SplitN(accept, ";", 2)[0]) {
		t.Fatalf("asked for %s, got %s", accept, got)
	}
	return b
}

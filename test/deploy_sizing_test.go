package test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// Fleet sizing budgets of one agent on the reference segment (7 slaves),
// as the README's "Sizing a fleet" states them; the measured figures are
// logged.
const (
	maxSeriesPerAgent   = 1000
	maxScrapeGzipBytes  = 32 << 10
	maxScrapeProtoBytes = 96 << 10
)

// TestFleetSizing runs an agent on the built-in simulated reference
// segment and measures what a fleet planner needs per agent: series per
// scrape, bytes per scrape in each exposition format (gzip as Prometheus
// asks for it), and MQTT messages per second at the default publish
// interval. `go test ./test -run TestFleetSizing -v` prints the figures
// the README quotes.
func TestFleetSizing(t *testing.T) {
	addr := testsupport.FreeAddr(t)
	shm := fmt.Sprintf("/dev/shm/ecagent-sizing-%d.shm", os.Getpid())
	cmd := exec.Command(ecagentBinary(t), "run", "--cycle.shm", shm, "--status.interval", "0",
		"--metrics.listen", addr, "--metrics.window", "1s", "--mqtt.embedded", "127.0.0.1:0")
	a := startProcess(t, cmd)
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for !ready(addr) {
		if time.Now().After(deadline) || closed(exited) {
			t.Fatalf("the agent did not become ready:\n%s", a.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2500 * time.Millisecond) // windows closed, every series present

	text := fetch(t, addr, "text/plain; version=0.0.4", false)
	gz := fetch(t, addr, "text/plain; version=0.0.4", true)
	om := fetch(t, addr, "application/openmetrics-text; version=1.0.0", true)
	proto := fetch(t, addr, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", false)
	protoGz := fetch(t, addr, "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited", true)
	var series, ecagent int
	for _, line := range strings.Split(string(text), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		series++
		if strings.HasPrefix(line, "ecagent_") {
			ecagent++
		}
	}
	published := func() float64 {
		fams := scrape(t, addr)
		f := fams["ecagent_mqtt_messages_published_total"]
		if f == nil || len(f.GetMetric()) == 0 {
			return -1
		}
		return f.GetMetric()[0].GetCounter().GetValue()
	}
	p0, t0 := published(), time.Now()
	time.Sleep(5 * time.Second)
	p1, t1 := published(), time.Now()
	mqttRate := (p1 - p0) / t1.Sub(t0).Seconds()

	t.Logf("per agent (reference segment, 7 slaves, 1 ms cycle, mqtt.interval 100ms):")
	t.Logf("  series per scrape (classic buckets, text format): %d, of them ecagent_*: %d", series, ecagent)
	t.Logf("  bytes per scrape: text %d (gzip %d), OpenMetrics gzip %d, protobuf with native histograms %d (gzip %d)",
		len(text), len(gz), len(om), len(proto), len(protoGz))
	t.Logf("  MQTT messages per second: %.1f", mqttRate)

	if series > maxSeriesPerAgent {
		t.Errorf("%d series per agent, budget %d", series, maxSeriesPerAgent)
	}
	if len(gz) > maxScrapeGzipBytes || len(proto) > maxScrapeProtoBytes {
		t.Errorf("scrape of %d bytes gzip / %d protobuf, budget %d / %d", len(gz), len(proto), maxScrapeGzipBytes, maxScrapeProtoBytes)
	}
	if p0 < 0 || mqttRate <= 0 {
		t.Errorf("no MQTT messages published (counter %v -> %v)", p0, p1)
	}
}

func ready(addr string) bool {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
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

package test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	clientmodel "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/ecagent/ecagent/metrics"
)

// freePort returns a loopback port nobody listens on right now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestScrapeRunningAgent scrapes a running agent (cycle over a veth pair)
// a few times, parses the exposition with Prometheus's text parser, and
// checks that every documented series is there, the counters advance and
// /readyz says ready.
func TestScrapeRunningAgent(t *testing.T) {
	w := newWire(t, "scr")
	startSim(t, w, strings.Join(referenceSet, ","))
	addr := freePort(t)
	path := fmt.Sprintf("/dev/shm/ecagent-scrape-%d.shm", os.Getpid())
	a := startAgent(t, "--bus.interface", w.MasterEnd, "--cycle.shm", path, "--status.interval", "0",
		"--metrics.listen", addr, "--metrics.window", "1s")
	t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGTERM); _ = a.cmd.Wait() })
	a.waitLog(t, "cycle started", 30*time.Second)
	time.Sleep(2200 * time.Millisecond) // two windows closed

	first := scrape(t, addr)
	time.Sleep(300 * time.Millisecond)
	second := scrape(t, addr)
	for _, s := range metrics.Documented() {
		if strings.Contains(s.Conditional, "error counters") || strings.Contains(s.Conditional, "pinned") ||
			strings.Contains(s.Conditional, "CoE emergency") || strings.Contains(s.Conditional, "CiA 402 drive") {
			continue // not read in this version / the test does not pin the cycle / no drive on this bus (TestServoDemo has one)
		}
		if _, ok := second[s.Name]; !ok {
			t.Errorf("series %s (%s) missing from the scrape", s.Name, s.Type)
		}
	}
	cycles := func(fams map[string]*dto) float64 {
		f := fams["ecagent_cycles_total"]
		if f == nil || len(f.GetMetric()) == 0 {
			return -1
		}
		return f.GetMetric()[0].GetCounter().GetValue()
	}
	if c1, c2 := cycles(first), cycles(second); c1 <= 0 || c2 <= c1 {
		t.Errorf("ecagent_cycles_total went from %v to %v", c1, c2)
	}
	if st := second["ecagent_slave_al_state"]; st == nil || len(st.GetMetric()) != 7 {
		t.Errorf("want 7 slave state series, got %v", st)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz: %s", resp.Status)
	}
}

type dto = clientmodel.MetricFamily

// scrape fetches /metrics in the text format and parses it.
func scrape(t *testing.T, addr string) map[string]*dto {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	return fams
}

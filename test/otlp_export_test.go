package test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/metrics/otlp/otlptest"
)

// TestOTLPExportOfARunningAgent runs the agent with its OpenTelemetry
// export pointed at an OTLP receiver in the test, over HTTP/protobuf (from
// otlp.endpoint) and over gRPC (from the OTEL_EXPORTER_OTLP_* environment
// only), and checks what arrives: the fleet resource attributes,
// exponential histograms whose counts agree with the counters, and
// counters that keep up with the Prometheus endpoint's.
func TestOTLPExportOfARunningAgent(t *testing.T) {
	for _, tc := range []struct {
		name string
		grpc bool
	}{{"http", false}, {"grpc", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				rcv *otlptest.Receiver
				err error
			)
			if tc.grpc {
				rcv, err = otlptest.NewGRPC()
			} else {
				rcv, err = otlptest.NewHTTP()
			}
			if err != nil {
				t.Fatal(err)
			}
			defer rcv.Close()
			args := []string{"--site", "plant-9", "--line", "press-2", "--host", "edge-42", "--otlp.interval", "1s"}
			if tc.grpc {
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.URL())
				t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
				t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=plant-9")
			} else {
				args = append(args, "--otlp.endpoint", rcv.URL())
			}
			addr, a := startFleetAgent(t, "otl"+tc.name[:1], args...)
			if !strings.Contains(a.log(), "OpenTelemetry export") {
				t.Errorf("the agent does not say it exports:\n%s", a.log())
			}

			// An export after a scrape carries at least the scraped cycles.
			scraped := scrape(t, addr)["ecagent_cycles_total"].GetMetric()[0].GetCounter().GetValue()
			seen := time.Now()
			ok := rcv.Wait(10*time.Second, func(exports []otlptest.Export) bool {
				m, _ := otlptest.Latest(exports, "ecagent.cycles")
				return m != nil && float64(m.GetSum().GetDataPoints()[0].GetAsInt()) >= scraped
			})
			if !ok {
				t.Fatalf("no export with at least the %v cycles scraped at %s arrived", scraped, seen.Format(time.TimeOnly))
			}

			// Stop the agent: its last export flushes everything.
			_ = a.cmd.Process.Signal(syscall.SIGTERM)
			_ = a.cmd.Wait()
			exports := rcv.Exports()
			count := func(name string) int64 {
				t.Helper()
				m, _ := otlptest.Latest(exports, name)
				if m == nil {
					t.Fatalf("%s was never exported", name)
				}
				switch {
				case m.GetSum() != nil:
					return m.GetSum().GetDataPoints()[0].GetAsInt()
				case m.GetExponentialHistogram() != nil:
					return int64(m.GetExponentialHistogram().GetDataPoints()[0].GetCount())
				}
				t.Fatalf("%s is neither a sum nor an exponential histogram", name)
				return 0
			}
			cycles, lost, drops := count("ecagent.cycles"), count("ecagent.lost_frames"), count("ecagent.sample_ring_drops")
			t.Logf("%d exports; cycles %d, lost frames %d, ring drops %d", len(exports), cycles, lost, drops)
			if cycles < 1000 {
				t.Errorf("only %d cycles exported", cycles)
			}
			for name, want := range map[string]int64{
				"ecagent.wakeup_latency": cycles,
				"ecagent.job_duration":   cycles,
				"ecagent.cycle_cpu_load": cycles,
				"ecagent.frame_rtt":      cycles - lost,
			} {
				if got := count(name); got != want {
					t.Errorf("%s counts %d values, want %d", name, got, want)
				}
			}
			// Periods pair consecutive samples: one fewer than the cycles,
			// and one fewer for each gap a dropped sample leaves.
			if j := count("ecagent.cycle_jitter"); j > cycles-1 || j < cycles-1-drops {
				t.Errorf("ecagent.cycle_jitter counts %d, want %d (minus at most %d dropped)", j, cycles-1, drops)
			}

			m, res := otlptest.Latest(exports, "ecagent.cycle_jitter")
			for k, want := range map[string]string{"service.name": "ecagent", "site": "plant-9", "line": "press-2",
				"host": "edge-42", "host.name": "edge-42", "service.instance.id": "plant-9/press-2/edge-42"} {
				if res[k] != want {
					t.Errorf("resource attribute %s = %q, want %q", k, res[k], want)
				}
			}
			if v := res["service.version"]; v == "" {
				t.Error("no service.version")
			}
			if dp := m.GetExponentialHistogram().GetDataPoints()[0]; dp.GetMax() <= 0 || dp.GetScale() < 0 {
				t.Errorf("jitter histogram: max %g scale %d", dp.GetMax(), dp.GetScale())
			}
			if w, _ := otlptest.Latest(exports, "ecagent.cycle_jitter_window"); w == nil || len(w.GetGauge().GetDataPoints()) != 8 {
				t.Errorf("jitter window gauge: %v, want 8 statistics", w)
			}
			if tc.grpc {
				if h := exports[0].Headers["x-tenant"]; len(h) != 1 || h[0] != "plant-9" {
					t.Errorf("x-tenant header %v, want plant-9 from OTEL_EXPORTER_OTLP_HEADERS", h)
				}
			}
		})
	}
}

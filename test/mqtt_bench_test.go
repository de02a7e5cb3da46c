package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// BenchmarkMQTTReference128 runs the agent over the reference segment
// plus 128 simulated slaves (alternately EL1014 and EL2004), publishing
// every slave at 100 Hz with QoS 1 to a local mosquitto, and reports what
// a subscriber receives: messages per second, the publish delay (snapshot
// to arrival) p50/p99, and the agent process's heap allocations per
// message (all of its allocations, MQTT client included, over the
// messages it delivered). Run it with
//
//	go test -run XXX -bench MQTTReference128 -benchtime 1x ./test/
func BenchmarkMQTTReference128(b *testing.B) {
	const measure = 5 * time.Second
	broker := mqtttest.StartMosquitto(b, mqtttest.MosquittoOptions{})
	devices := append([]string(nil), referenceSet...)
	for i := range 128 {
		devices = append(devices, []string{"EL1014", "EL2004"}[i%2])
	}
	var delays []time.Duration
	var count int
	mu := make(chan struct{}, 1) // a lock the handler and the loop share
	mu <- struct{}{}
	sub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("bench-sub").
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			at := time.Now()
			if !strings.Contains(m.Topic(), "/pd/") {
				return
			}
			var pd struct {
				TS int64 `json:"ts"`
			}
			if json.Unmarshal(m.Payload(), &pd) != nil {
				return
			}
			<-mu
			count++
			delays = append(delays, at.Sub(time.UnixMilli(pd.TS)))
			mu <- struct{}{}
		}))
	if tok := sub.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		b.Fatal(tok.Error())
	}
	defer sub.Disconnect(0)
	sub.Subscribe("ecagent/bench/+/pd/+", 1, nil).WaitTimeout(5 * time.Second)

	addr := testsupport.FreeAddr(b)
	path := fmt.Sprintf("/dev/shm/ecagent-mqtt-bench-%d.shm", os.Getpid())
	a := startAgentB(b, "--cycle.shm", path, "--status.interval", "0", "--metrics.listen", addr,
		"--site", "bench", "--host", "edge", "--bus.devices", strings.Join(devices, ","),
		"--mqtt.broker", broker.URL(), "--mqtt.interval", "10ms", "--mqtt.buffer", "100000")
	defer func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		_ = a.cmd.Wait()
	}()
	for deadline := time.Now().Add(60 * time.Second); !strings.Contains(a.log(), "cycle started"); {
		if time.Now().After(deadline) {
			b.Fatalf("the agent did not start:\n%s", a.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(2 * time.Second) // births, meta, warm-up
	for b.Loop() {
		m0 := scrapeB(b, addr)
		<-mu
		count, delays = 0, delays[:0]
		mu <- struct{}{}
		start := time.Now()
		time.Sleep(measure)
		<-mu
		n, ds := count, slices.Clone(delays)
		mu <- struct{}{}
		elapsed := time.Since(start)
		m1 := scrapeB(b, addr)
		slices.Sort(ds)
		if len(ds) == 0 {
			b.Fatal("nothing received")
		}
		delivered := m1["ecagent_mqtt_messages_delivered_total"] - m0["ecagent_mqtt_messages_delivered_total"]
		mallocs := m1["go_memstats_mallocs_total"] - m0["go_memstats_mallocs_total"]
		b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "delay-p50-ms")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "delay-p99-ms")
		b.ReportMetric(mallocs/delivered, "agent-allocs/msg")
		b.ReportMetric(m1["ecagent_mqtt_messages_dropped_total"], "dropped")
		b.ReportMetric(100*(m1["process_cpu_seconds_total"]-m0["process_cpu_seconds_total"])/elapsed.Seconds(), "agent-cpu-%")
	}
}

// The tests' helpers take a *testing.T; these take a benchmark.

// startAgentB is startAgent for a benchmark: `ecagent run` with its output
// in files.
func startAgentB(b *testing.B, args ...string) *agentProc {
	b.Helper()
	buildBinaries()
	if buildErr != nil {
		b.Fatalf("building ecagent: %v", buildErr)
	}
	return startWithFiles(b, exec.Command(binary, append([]string{"run"}, args...)...))
}

// scrapeB returns the value of every single-series family (the sum of
// the series otherwise) of the agent's /metrics.
func scrapeB(b *testing.B, addr string) map[string]float64 {
	b.Helper()
	resp := getMetrics(b, addr)
	defer resp.Body.Close()
	out := map[string]float64{}
	for name, f := range parseExposition(b, resp.Body) {
		for _, m := range f.GetMetric() {
			out[name] += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return out
}

package test

import (
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// TestMQTTSparkplugEndToEnd runs the agent in the Sparkplug B scheme
// against a private mosquitto and plays the SCADA host: it decodes every
// payload with the protobuf runtime and checks that NBIRTH and the
// DBIRTHs precede the data, that seq counts up and wraps, that the window
// statistics come as NDATA, that a DCMD is refused (writes are off by
// default) with a reason on the events topic, and that the broker
// delivers the NDEATH will, with the NBIRTH's bdSeq, when the agent is
// killed.
func TestMQTTSparkplugEndToEnd(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	host, hostClient := mqtttest.Subscribe(t, broker.URL(), "scada", "spBv1.0/line3/#", false)
	events, _ := mqtttest.Subscribe(t, broker.URL(), "events", "ecagent/plant/edge7/events", false)
	path := fmt.Sprintf("/dev/shm/ecagent-mqtt-sp-%d.shm", os.Getpid())
	a := startAgent(t, "--cycle.shm", path, "--status.interval", "0", "--metrics.listen", "", "--metrics.window", "1s",
		"--site", "plant", "--host", "edge7", "--mqtt.broker", broker.URL(), "--mqtt.scheme", "sparkplug",
		"--mqtt.sparkplug.group", "line3", "--mqtt.interval", "10ms")
	t.Cleanup(func() { _ = a.cmd.Process.Kill(); _ = a.cmd.Wait(); cyclereap.Stop(t, path) })
	a.waitLog(t, "cycle started", 30*time.Second)

	host.WaitFrom(t, 0, "/NDATA/edge7", 10*time.Second, nil)
	// 5 slaves with process data at 100 Hz: seq wraps twice a second.
	host.WaitFrom(t, host.Len(), "/DDATA/edge7/EL1014-4", 5*time.Second, nil)
	// Does not synchronise: lets seq wrap (twice) before the checks below.
	time.Sleep(1200 * time.Millisecond)

	dcmd := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(time.Now().UnixMilli()),
		Metrics: []sparkplug.Metric{{Name: "channel_1.output", DataType: sparkplug.Boolean, Bool: true}}})
	hostClient.Publish(sparkplug.DeviceTopic("line3", sparkplug.DCMD, "edge7", "EL2004-1"), 0, false, dcmd).WaitTimeout(5 * time.Second)
	m := events.WaitFrom(t, 0, "/events", 5*time.Second, func(m mqtttest.Message) bool {
		var ev map[string]any
		return json.Unmarshal(m.Payload, &ev) == nil && ev["kind"] == "command-rejected"
	})
	var ev map[string]any
	_ = json.Unmarshal(m.Payload, &ev)
	if ev["code"] != "disabled" || ev["slave"] != "EL2004-1" || ev["signal"] != "channel_1.output" {
		t.Errorf("DCMD with writes off: %s", m.Payload)
	}

	// Kill the agent: the broker publishes the will.
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	death := host.WaitFrom(t, 0, "/NDEATH/edge7", 10*time.Second, nil)

	var births, data, ndata, wraps int
	var bdSeq any
	var seq uint64
	born := map[string]bool{}
	for i, msg := range host.All() {
		topic, ok := sparkplug.ParseTopic(msg.Topic)
		if !ok {
			t.Fatalf("not a Sparkplug topic: %s", msg.Topic)
		}
		p, err := mqtttest.DecodeSparkplug(msg.Payload)
		if err != nil {
			t.Fatalf("%s: %v", msg.Topic, err)
		}
		if i == 0 && topic.Type != sparkplug.NBIRTH {
			t.Fatalf("the first message is %s, not NBIRTH", topic.Type)
		}
		switch topic.Type {
		case sparkplug.NDEATH:
			for _, x := range p.Metrics {
				if x.Name == sparkplug.MetricBdSeq && x.Value != bdSeq {
					t.Errorf("NDEATH bdSeq %v, NBIRTH had %v", x.Value, bdSeq)
				}
			}
			continue
		case sparkplug.DCMD:
			continue
		case sparkplug.NBIRTH:
			births++
			if p.Seq != 0 {
				t.Errorf("NBIRTH seq %d", p.Seq)
			}
			for _, x := range p.Metrics {
				if x.Name == sparkplug.MetricBdSeq {
					bdSeq = x.Value
				}
			}
		case sparkplug.DBIRTH:
			born[topic.Device] = true
		case sparkplug.DDATA:
			data++
			if !born[topic.Device] {
				t.Fatalf("DDATA of %s before its DBIRTH", topic.Device)
			}
		case sparkplug.NDATA:
			ndata++
		}
		if topic.Type != sparkplug.NBIRTH {
			if !p.HasSeq || p.Seq != (seq+1)%256 {
				t.Fatalf("%s: seq %d (present %v) after %d", msg.Topic, p.Seq, p.HasSeq, seq)
			}
			if p.Seq == 0 {
				wraps++
			}
		}
		seq = p.Seq
	}
	t.Logf("%d NBIRTH, %d DBIRTH, %d DDATA, %d NDATA, seq wrapped %d times; NDEATH %d bytes", births, len(born), data, ndata, wraps, len(death.Payload))
	if births != 1 || len(born) != 7 || wraps < 2 || ndata < 1 || bdSeq == nil {
		t.Errorf("births %d, devices born %d, wraps %d, NDATA %d, bdSeq %v", births, len(born), wraps, ndata, bdSeq)
	}
}

package mqtt

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/busstate"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/contract"
)

// TestJSONCycleSpike: an explained late cycle is a cycle-spike event on
// …/events with the culprits, largest first, as contract.SpikeView says.
func TestJSONCycleSpike(t *testing.T) {
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	root := "ecagent/spike/json"
	sub := subscribe(t, broker.URL(), "sub", root+"/#", false)
	p, err := New(Config{Broker: broker.URL(), ClientID: "spikejson", Scheme: SchemeJSON, QoS: 1, Root: root,
		Rules: Rules{Interval: 10 * time.Millisecond}, Buffer: 10000, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.SetBusModel(busstate.New(nil))
	p.Start()
	t.Cleanup(func() { _ = p.Close(time.Second) })
	sub.waitFor(t, "/status", 5*time.Second, nil)

	sp := contract.CycleSpike{Cycle: 1047, Deadline: 5_000_000, Wake: 7_568_000, End: 7_600_000,
		Late: 2568 * time.Microsecond, Excess: 2563 * time.Microsecond, Causes: []contract.SpikeCause{
			{Class: contract.SpikeTask, Name: "ecspikehog/23025 FIFO 90", PID: 23025, Time: 2466 * time.Microsecond, Share: 0.962},
			{Class: contract.SpikeIRQ, Name: "local_timer", Time: 97 * time.Microsecond, Share: 0.038}}}
	p.CycleSpike(&sp, time.Now())
	ev := sub.waitFor(t, "/events", 5*time.Second, func(r received) bool { return strings.Contains(string(r.payload), "cycle-spike") })
	var got struct {
		Kind     string                    `json:"kind"`
		Cycle    uint64                    `json:"cycle"`
		Cause    string                    `json:"cause"`
		LateUS   float64                   `json:"late_us"`
		ExcessUS float64                   `json:"excess_us"`
		Causes   []contract.SpikeCauseView `json:"causes"`
	}
	if err := json.Unmarshal(ev.payload, &got); err != nil {
		t.Fatalf("event %s: %v", ev.payload, err)
	}
	if got.Kind != "cycle-spike" || got.Cycle != 1047 || got.Cause != "task" || got.LateUS != 2568 || got.ExcessUS != 2563 ||
		len(got.Causes) != 2 || got.Causes[0].Name != "ecspikehog/23025 FIFO 90" || got.Causes[0].PID != 23025 ||
		got.Causes[0].Share != 0.962 || got.Causes[1].Class != "irq" {
		t.Errorf("event %s", ev.payload)
	}
}

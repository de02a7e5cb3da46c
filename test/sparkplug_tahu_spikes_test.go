package test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/contract"
)

// spikeNames are the node metrics of a spike (docs/mqtt.md, Sparkplug B),
// with the datatype Tahu names.
var spikeNames = map[string]string{
	"Spikes/Count": "UInt64", "Spikes/Last/cycle": "UInt64", "Spikes/Last/cause": "String",
	"Spikes/Last/culprit": "String", "Spikes/Last/late_us": "Double", "Spikes/Last/excess_us": "Double",
	"Spikes/Last/overrun": "Boolean", "Spikes/Last/steal_us": "Double", "Spikes/Last/incomplete": "Boolean",
	"Spikes/Last/causes": "String",
}

// TestSparkplugTahuSpikes runs the agent in the Sparkplug B scheme with
// forensics on (the cycle pinned, as the spike tests run it) and a
// SCHED_FIFO hog on the cycle's core, asks for a rebirth, and has Eclipse
// Tahu's decoder read every message of the edge node: the rules of
// TestSparkplugTahuConformance hold with the spike metrics in the stream
// (seq, birth order, datatypes BIRTH = DATA, aliases, timestamps), and
// the subtest spikes checks what a host reads of them (checkTahuSpikes).
func TestSparkplugTahuSpikes(t *testing.T) {
	tahu := mqtttest.NeedTahu(t)
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	host, hostClient := mqtttest.Subscribe(t, broker.URL(), "scada-spikes", "spBv1.0/#", false)
	events, _ := mqtttest.Subscribe(t, broker.URL(), "events-spikes", "ecagent/+/+/events", false)
	startSpikeAgent(t, "sptahu", "--site", "plant", "--host", "edge8", "--mqtt.broker", broker.URL(),
		"--mqtt.scheme", "sparkplug", "--mqtt.sparkplug.group", "line3", "--mqtt.interval", "10ms", "--metrics.window", "1s")
	birth := host.WaitFrom(t, 0, "/NBIRTH/edge8", 30*time.Second, nil)
	var bp sparkplug.Payload
	if err := sparkplug.DecodePayload(birth.Payload, &bp); err != nil {
		t.Fatal(err)
	}
	var countAlias uint64
	for _, m := range bp.Metrics {
		if m.Name == "Spikes/Count" {
			countAlias = m.Alias
		}
	}
	if countAlias == 0 {
		t.Fatalf("NBIRTH declares no Spikes/Count: %+v", bp.Metrics)
	}

	const hogName = "ecsparkhog"
	h := startHog(t, 90, 3*time.Millisecond, 200*time.Millisecond, 2*time.Second, hogName)
	culprit := fmt.Sprintf("%s/%d ", hogName, h.tid)
	// The hog's spikes, as NDATA: at least three blamed on it; and
	// enough messages for seq to wrap twice.
	host.Wait(t, 30*time.Second, "three spike NDATA blaming "+culprit+" and 600 messages", func(ms []mqtttest.Message) bool {
		n := 0
		for _, m := range ms {
			if strings.Contains(m.Topic, "/NDATA/") && strings.Contains(string(m.Payload), culprit) {
				n++
			}
		}
		return n >= 3 && len(ms) >= 600
	})

	from := host.Len()
	rebirth := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(time.Now().UnixMilli()),
		Metrics: []sparkplug.Metric{{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true}}})
	if tok := hostClient.Publish(sparkplug.NodeTopic("line3", sparkplug.NCMD, "edge8"), 0, false, rebirth); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publishing the rebirth NCMD: %v", tok.Error())
	}
	reborn := host.WaitFrom(t, from, "/NBIRTH/edge8", 10*time.Second, nil)
	host.WaitFrom(t, from, "/DDATA/edge8/EL1014-4", 10*time.Second, func(m mqtttest.Message) bool { return m.At.After(reborn.At) })

	ms := tahuDecodeNode(t, tahu, host.All(), "edge8")
	t.Run("seq", func(t *testing.T) { checkTahuSeq(t, ms) })
	t.Run("birth-order", func(t *testing.T) { checkTahuBirthOrder(t, ms) })
	t.Run("datatypes", func(t *testing.T) { checkTahuDatatypes(t, ms) })
	t.Run("aliases", func(t *testing.T) { checkTahuAliases(t, ms) })
	t.Run("timestamps", func(t *testing.T) { checkTahuTimestamps(t, ms) })
	t.Run("spikes", func(t *testing.T) { checkTahuSpikes(t, ms, events, culprit) })
}

// tahuSpike is the spike metrics of one message, by name, as Tahu read them.
type tahuSpike map[string]mqtttest.TahuMetric

// checkTahuSpikes: each NBIRTH declares every spike metric with its
// datatype, the last spike's null (no value) while Spikes/Count is 0 and
// set once it is not — the rebirth's the values of the latest spike NDATA
// before it; each spike NDATA carries all of them, Spikes/Count one up
// (one made offline and sent historical after the NBIRTH counted it: not
// above the NBIRTH's),
// the largest cause and its name as the first of Spikes/Last/causes, at
// the payload's time; every spike NDATA is the JSON cycle-spike event of
// its cycle (same cause, lateness, causes) and every such event of the
// run has its NDATA; some blame culprit.
func checkTahuSpikes(t *testing.T, ms []tahuMessage, events *mqtttest.Inbox, culprit string) {
	v := newViolations("spikes")
	var names map[uint64]string
	var last tahuSpike
	var count uint64
	var data []tahuSpike
	for _, m := range ms {
		switch m.topic.Type {
		case sparkplug.NBIRTH:
			names = map[uint64]string{}
			got := tahuSpike{}
			for _, x := range m.p.Metrics {
				if x.Name != nil && strings.HasPrefix(*x.Name, "Spikes/") {
					names[*x.Alias] = *x.Name
					got[*x.Name] = x
				}
			}
			checkSpikeBirth(v, m, got, last)
			if c, ok := got["Spikes/Count"].Value.(uint64); ok {
				count = c
			}
		case sparkplug.NDATA:
			got := tahuSpike{}
			for _, x := range m.p.Metrics {
				if x.Alias != nil && names[*x.Alias] != "" {
					got[names[*x.Alias]] = x
				}
			}
			if len(got) == 0 {
				continue
			}
			c, _ := got["Spikes/Count"].Value.(uint64)
			if x := got["Spikes/Count"]; x.IsHistorical != nil && *x.IsHistorical {
				// made before the NBIRTH it follows, which counted it
				checkSpikeData(v, m, got, c-1)
			} else {
				checkSpikeData(v, m, got, count)
			}
			if c > count || last == nil {
				count, last = max(c, count), got
			}
			data = append(data, got)
		}
	}
	checkSpikeEvents(t, v, data, events, culprit, ms)
	v.report(t)
}

// checkSpikeBirth checks an NBIRTH's spike metrics; last is the spike
// NDATA before it (nil for none).
func checkSpikeBirth(v *violations, m tahuMessage, got, last tahuSpike) {
	count, _ := got["Spikes/Count"].Value.(uint64)
	for name, typ := range spikeNames {
		x, ok := got[name]
		switch {
		case !ok:
			v.add(m, "NBIRTH does not declare %s", name)
		case x.Type != typ:
			v.add(m, "NBIRTH declares %s as %s, want %s", name, x.Type, typ)
		case name == "Spikes/Count":
		case count == 0 && (x.Value != nil || x.ValueField != ""):
			v.add(m, "NBIRTH before any spike: %s = %v (in %s), want null", name, x.Value, x.ValueField)
		case count > 0 && x.Value == nil:
			v.add(m, "NBIRTH after %d spikes: %s is null", count, name)
		case last != nil && !reflect.DeepEqual(x.Value, last[name].Value):
			v.add(m, "rebirth: %s = %v, the last spike NDATA had %v", name, x.Value, last[name].Value)
		}
	}
	if len(got) != len(spikeNames) {
		v.add(m, "NBIRTH declares %d spike metrics, want %d", len(got), len(spikeNames))
	}
}

// checkSpikeData checks a spike NDATA, the one after count spikes.
func checkSpikeData(v *violations, m tahuMessage, got tahuSpike, count uint64) {
	if len(got) != len(spikeNames) {
		v.add(m, "spike NDATA with %d of the %d spike metrics", len(got), len(spikeNames))
	}
	if c, _ := got["Spikes/Count"].Value.(uint64); c != count+1 {
		v.add(m, "Spikes/Count %v after %d", got["Spikes/Count"].Value, count)
	}
	for name, x := range got {
		if x.Timestamp == nil || m.p.Timestamp == nil || *x.Timestamp != *m.p.Timestamp {
			v.add(m, "spike NDATA %s timestamp %v, payload %v: want the spike's time in both", name, x.Timestamp, m.p.Timestamp)
		}
	}
	var causes []contract.SpikeCauseView
	s, _ := got["Spikes/Last/causes"].Value.(string)
	if err := json.Unmarshal([]byte(s), &causes); err != nil {
		v.add(m, "Spikes/Last/causes %q: %v", s, err)
		return
	}
	cause, _ := got["Spikes/Last/cause"].Value.(string)
	name, _ := got["Spikes/Last/culprit"].Value.(string)
	switch {
	case !slices.ContainsFunc(contract.SpikeClasses(), func(c contract.SpikeClass) bool { return c.String() == cause }):
		v.add(m, "Spikes/Last/cause %q is not a class", cause)
	case len(causes) > 0 && (causes[0].Class != cause || causes[0].Name != name):
		v.add(m, "Spikes/Last/cause %q culprit %q, the first of causes is %+v", cause, name, causes[0])
	case len(causes) == 0 && (cause != "unknown" || name != ""):
		v.add(m, "no causes, Spikes/Last/cause %q culprit %q", cause, name)
	}
}

// checkSpikeEvents matches the spike NDATA with the JSON cycle-spike
// events: one each, the same spike.
func checkSpikeEvents(t *testing.T, v *violations, data []tahuSpike, events *mqtttest.Inbox, culprit string, ms []tahuMessage) {
	at := ms[len(ms)-1]
	if len(data) == 0 {
		v.add(at, "no spike NDATA")
		return
	}
	lastCycle, _ := data[len(data)-1]["Spikes/Last/cycle"].Value.(uint64)
	// The events come on their own connection: wait for the last one.
	events.WaitFrom(t, 0, "/events", 10*time.Second, func(m mqtttest.Message) bool {
		return strings.Contains(string(m.Payload), fmt.Sprintf(`"kind":"cycle-spike","cycle":%d,`, lastCycle))
	})
	byCycle := map[uint64]contract.SpikeView{}
	for _, m := range events.All() {
		var e struct {
			Kind string `json:"kind"`
			contract.SpikeView
		}
		if json.Unmarshal(m.Payload, &e) == nil && e.Kind == "cycle-spike" && e.Cycle <= lastCycle {
			byCycle[e.Cycle] = e.SpikeView
		}
	}
	blamed := 0
	for _, d := range data {
		cycle, _ := d["Spikes/Last/cycle"].Value.(uint64)
		e, ok := byCycle[cycle]
		delete(byCycle, cycle)
		var causes []contract.SpikeCauseView
		s, _ := d["Spikes/Last/causes"].Value.(string)
		_ = json.Unmarshal([]byte(s), &causes)
		switch {
		case !ok:
			v.add(at, "spike NDATA of cycle %d without its cycle-spike event", cycle)
		case d["Spikes/Last/cause"].Value != e.Top || d["Spikes/Last/late_us"].Value != e.LateUS ||
			d["Spikes/Last/excess_us"].Value != e.ExcessUS || d["Spikes/Last/overrun"].Value != e.Overrun ||
			d["Spikes/Last/steal_us"].Value != e.StealUS || d["Spikes/Last/incomplete"].Value != e.Incomplete ||
			!reflect.DeepEqual(causes, e.Causes):
			v.add(at, "spike NDATA of cycle %d differs from its event: %+v vs %+v", cycle, d, e)
		}
		if name, _ := d["Spikes/Last/culprit"].Value.(string); strings.HasPrefix(name, culprit) {
			blamed++
		}
	}
	for cycle := range byCycle {
		v.add(at, "cycle-spike event of cycle %d without its spike NDATA", cycle)
	}
	if blamed == 0 {
		v.add(at, "no spike NDATA blames %s", culprit)
	}
	t.Logf("%d spike NDATA, %d blaming %s", len(data), blamed, culprit)
}

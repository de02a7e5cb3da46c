package test

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// tahuMessage is a message of the edge node as Eclipse Tahu decoded it.
type tahuMessage struct {
	i     int // index among the messages received
	topic sparkplug.Topic
	p     mqtttest.TahuPayload
}

func (m tahuMessage) String() string { return fmt.Sprintf("#%d %s", m.i, m.where()) }

// where is the message type and, for a device, its name.
func (m tahuMessage) where() string {
	if m.topic.Device != "" {
		return string(m.topic.Type) + " " + m.topic.Device
	}
	return string(m.topic.Type)
}

// violations collects the breaches of one rule, counted by description,
// so that one breach in every DDATA reads as one line with its count.
type violations struct {
	rule  string
	count map[string]int
	first map[string]int // index of the first message with it
}

func newViolations(rule string) *violations {
	return &violations{rule: rule, count: map[string]int{}, first: map[string]int{}}
}

func (v *violations) add(at tahuMessage, format string, args ...any) {
	d := fmt.Sprintf(format, args...)
	if _, ok := v.count[d]; !ok {
		v.first[d] = at.i
	}
	v.count[d]++
}

// report fails t with every distinct breach, in the order first seen.
func (v *violations) report(t *testing.T) {
	t.Helper()
	if len(v.count) == 0 {
		return
	}
	ds := make([]string, 0, len(v.count))
	for d := range v.count {
		ds = append(ds, d)
	}
	slices.SortFunc(ds, func(a, b string) int { return v.first[a] - v.first[b] })
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "\n  %s (%d×, first in message #%d)", d, v.count[d], v.first[d])
	}
	t.Errorf("%s: %d distinct violations:%s", v.rule, len(ds), b.String())
}

func metricLabel(m mqtttest.TahuMetric) string {
	var parts []string
	if m.Name != nil {
		parts = append(parts, fmt.Sprintf("%q", *m.Name))
	}
	if m.Alias != nil {
		parts = append(parts, fmt.Sprintf("alias %d", *m.Alias))
	}
	if len(parts) == 0 {
		return "metric without name or alias"
	}
	return strings.Join(parts, " ")
}

// TestSparkplugTahuConformance runs the agent in the Sparkplug B scheme
// against a private mosquitto, as TestMQTTSparkplugEndToEnd does, asks for
// a rebirth (NCMD Node Control/Rebirth), kills the agent so the broker
// sends the NDEATH will, and has Eclipse Tahu's own decoder (the npm
// package sparkplug-payload) read every message of the edge node. It then
// checks the Sparkplug B 3.0 rules, each in a subtest named after it (see
// docs/sparkplug-conformance.md): seq, bdSeq, the birth order, datatypes
// BIRTH = DATA, aliases, timestamps.
func TestSparkplugTahuConformance(t *testing.T) {
	tahu := mqtttest.NeedTahu(t)
	broker := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	host, hostClient := mqtttest.Subscribe(t, broker.URL(), "scada-tahu", "spBv1.0/#", false)
	path := fmt.Sprintf("/dev/shm/ecagent-mqtt-tahu-%d.shm", os.Getpid())
	a := startAgent(t, "--cycle.shm", path, "--status.interval", "0", "--metrics.listen", "", "--metrics.window", "1s",
		"--site", "plant", "--host", "edge7", "--mqtt.broker", broker.URL(), "--mqtt.scheme", "sparkplug",
		"--mqtt.sparkplug.group", "line3", "--mqtt.interval", "10ms")
	t.Cleanup(func() { _ = a.cmd.Process.Kill(); _ = a.cmd.Wait(); cyclereap.Stop(t, path) })
	a.waitLog(t, "cycle started", 30*time.Second)

	// Two closed windows (NDATA with the statistics' values) and enough
	// messages for seq to wrap twice.
	host.Wait(t, 30*time.Second, "two NDATA and 600 messages", func(ms []mqtttest.Message) bool {
		ndata := 0
		for _, m := range ms {
			if strings.Contains(m.Topic, "/NDATA/") {
				ndata++
			}
		}
		return ndata >= 2 && len(ms) >= 600
	})

	// Rebirth: a new NBIRTH, the DBIRTHs, then data again.
	from := host.Len()
	rebirth := sparkplug.AppendPayload(nil, &sparkplug.Payload{Timestamp: uint64(time.Now().UnixMilli()),
		Metrics: []sparkplug.Metric{{Name: sparkplug.MetricRebirth, DataType: sparkplug.Boolean, Bool: true}}})
	if tok := hostClient.Publish(sparkplug.NodeTopic("line3", sparkplug.NCMD, "edge7"), 0, false, rebirth); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
		t.Fatalf("publishing the rebirth NCMD: %v", tok.Error())
	}
	reborn := host.WaitFrom(t, from, "/NBIRTH/edge7", 10*time.Second, nil)
	host.WaitFrom(t, from, "/DDATA/edge7/EL1014-4", 10*time.Second, func(m mqtttest.Message) bool { return m.At.After(reborn.At) })

	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = a.cmd.Wait()
	host.WaitFrom(t, 0, "/NDEATH/edge7", 10*time.Second, nil)

	ms := tahuDecodeNode(t, tahu, host.All(), "edge7")
	t.Run("seq", func(t *testing.T) { checkTahuSeq(t, ms) })
	t.Run("bdSeq", func(t *testing.T) { checkTahuBdSeq(t, ms) })
	t.Run("birth-order", func(t *testing.T) { checkTahuBirthOrder(t, ms) })
	t.Run("datatypes", func(t *testing.T) { checkTahuDatatypes(t, ms) })
	t.Run("aliases", func(t *testing.T) { checkTahuAliases(t, ms) })
	t.Run("timestamps", func(t *testing.T) { checkTahuTimestamps(t, ms) })
}

// tahuDecodeNode has Tahu decode every message of the edge node node
// among msgs (not the host's own commands), failing t on a payload Tahu
// refuses.
func tahuDecodeNode(t *testing.T, tahu *mqtttest.Tahu, msgs []mqtttest.Message, node string) []tahuMessage {
	t.Helper()
	var ms []tahuMessage
	for i, m := range msgs {
		topic, ok := sparkplug.ParseTopic(m.Topic)
		if !ok {
			t.Fatalf("message #%d: not a Sparkplug topic: %s", i, m.Topic)
		}
		if topic.Type == sparkplug.NCMD || topic.Type == sparkplug.DCMD || topic.Node != node {
			continue // the host's own commands
		}
		p, err := tahu.Decode(m.Payload)
		if err != nil {
			t.Fatalf("message #%d on %s: %v", i, m.Topic, err)
		}
		ms = append(ms, tahuMessage{i: i, topic: topic, p: p})
	}
	counts := map[sparkplug.MessageType]int{}
	for _, m := range ms {
		counts[m.topic.Type]++
	}
	t.Logf("Tahu decoded %d messages of %s: %d NBIRTH, %d DBIRTH, %d NDATA, %d DDATA, %d NDEATH", len(ms), node,
		counts[sparkplug.NBIRTH], counts[sparkplug.DBIRTH], counts[sparkplug.NDATA], counts[sparkplug.DDATA], counts[sparkplug.NDEATH])
	return ms
}

// checkTahuSeq: every message of the node but NDEATH carries seq; NBIRTH
// has 0; each next message has one more, 255 followed by 0; NDEATH has
// none (Sparkplug 3.0 §6.4.5, tck-id-payloads-sequence-num-*).
func checkTahuSeq(t *testing.T, ms []tahuMessage) {
	v := newViolations("seq")
	var prev *uint64
	wraps := 0
	for _, m := range ms {
		seq := m.p.Seq
		switch {
		case m.topic.Type == sparkplug.NDEATH:
			if seq != nil {
				v.add(m, "NDEATH carries seq %d; it must carry none", *seq)
			}
			continue
		case seq == nil:
			v.add(m, "%s without seq", m.topic.Type)
		case *seq > 255:
			v.add(m, "%s seq %d out of 0..255", m.topic.Type, *seq)
		case m.topic.Type == sparkplug.NBIRTH:
			if *seq != 0 {
				v.add(m, "NBIRTH seq %d, want 0", *seq)
			}
		case prev == nil:
			v.add(m, "%s before any NBIRTH", m)
		case *seq != (*prev+1)%256:
			v.add(m, "%s seq %d after %d, want %d", m.topic.Type, *seq, *prev, (*prev+1)%256)
		case *seq == 0:
			wraps++
		}
		if seq != nil {
			prev = seq
		}
	}
	if wraps < 2 {
		v.add(ms[len(ms)-1], "seq wrapped from 255 to 0 %d times in %d messages, want at least 2", wraps, len(ms))
	}
	v.report(t)
}

// checkTahuBdSeq: every NBIRTH has a bdSeq metric of type UInt64, and the
// NDEATH (the will of the same connection: a rebirth does not reconnect)
// has the same value (§4.2, tck-id-topics-nbirth-bdseq-*,
// tck-id-topics-ndeath-payload).
func checkTahuBdSeq(t *testing.T, ms []tahuMessage) {
	v := newViolations("bdSeq")
	bdSeq := func(m tahuMessage) (any, bool) {
		for _, x := range m.p.Metrics {
			if x.Name != nil && *x.Name == sparkplug.MetricBdSeq {
				if x.Type != "UInt64" {
					v.add(m, "%s bdSeq of type %q, want UInt64", m.topic.Type, x.Type)
				}
				return x.Value, true
			}
		}
		v.add(m, "%s without a bdSeq metric", m.topic.Type)
		return nil, false
	}
	var births []any
	deaths := 0
	for _, m := range ms {
		switch m.topic.Type {
		case sparkplug.NBIRTH:
			if b, ok := bdSeq(m); ok {
				births = append(births, b)
			}
		case sparkplug.NDEATH:
			deaths++
			d, ok := bdSeq(m)
			if !ok {
				continue
			}
			for i, b := range births {
				if b != d {
					v.add(m, "NDEATH bdSeq %v, NBIRTH %d of this connection had %v", d, i+1, b)
				}
			}
		}
	}
	if len(births) < 2 || deaths != 1 {
		v.add(ms[len(ms)-1], "%d NBIRTH and %d NDEATH, want a birth, a rebirth and one death", len(births), deaths)
	}
	v.report(t)
}

// checkTahuBirthOrder: NBIRTH comes first; a device's DBIRTH follows the
// NBIRTH and precedes any DDATA of that device, after the rebirth too
// (§5, tck-id-operational-behavior-device-*).
func checkTahuBirthOrder(t *testing.T, ms []tahuMessage) {
	v := newViolations("birth-order")
	if ms[0].topic.Type != sparkplug.NBIRTH {
		v.add(ms[0], "the first message is %s, not NBIRTH", ms[0])
	}
	var born map[string]bool // since the last NBIRTH
	var sets []int
	for _, m := range ms {
		switch m.topic.Type {
		case sparkplug.NBIRTH:
			if born != nil {
				sets = append(sets, len(born))
			}
			born = map[string]bool{}
		case sparkplug.DBIRTH:
			if born == nil {
				v.add(m, "DBIRTH %s before any NBIRTH", m.topic.Device)
				continue
			}
			born[m.topic.Device] = true
		case sparkplug.DDATA:
			if !born[m.topic.Device] {
				v.add(m, "DDATA %s without a DBIRTH since the last NBIRTH", m.topic.Device)
			}
		case sparkplug.NDATA:
			if born == nil {
				v.add(m, "NDATA before any NBIRTH")
			}
		}
	}
	sets = append(sets, len(born))
	for i, n := range sets {
		if n != sets[0] || n == 0 {
			v.add(ms[len(ms)-1], "births %v: devices born after NBIRTH %d differ or none", sets, i+1)
		}
	}
	v.report(t)
}

// birthDef is a metric as a BIRTH declared it.
type birthDef struct {
	label string // name and alias
	typ   string // Tahu's datatype name
}

// nodeBirths indexes the metrics declared since the last NBIRTH by device
// ("" for the node) and name, and by device and alias.
type nodeBirths struct {
	byName  map[string]birthDef
	byAlias map[string]birthDef
}

func (b *nodeBirths) declare(device string, m mqtttest.TahuMetric) {
	d := birthDef{label: metricLabel(m), typ: m.Type}
	if m.Name != nil {
		b.byName[device+"\x00"+*m.Name] = d
	}
	if m.Alias != nil {
		b.byAlias[fmt.Sprintf("%s\x00%d", device, *m.Alias)] = d
	}
}

func (b *nodeBirths) lookup(device string, m mqtttest.TahuMetric) (birthDef, bool) {
	if m.Alias != nil {
		d, ok := b.byAlias[fmt.Sprintf("%s\x00%d", device, *m.Alias)]
		return d, ok
	}
	if m.Name != nil {
		d, ok := b.byName[device+"\x00"+*m.Name]
		return d, ok
	}
	return birthDef{}, false
}

// checkTahuDatatypes: every BIRTH metric declares a datatype Tahu knows
// (tck-id-payloads-metric-datatype-req, -value), and every metric of an
// NDATA or DDATA is one its BIRTH declared, sent with the datatype the
// BIRTH declared for that name or alias.
func checkTahuDatatypes(t *testing.T, ms []tahuMessage) {
	v := newViolations("datatypes")
	var births *nodeBirths
	for _, m := range ms {
		switch m.topic.Type {
		case sparkplug.NBIRTH:
			births = &nodeBirths{byName: map[string]birthDef{}, byAlias: map[string]birthDef{}}
			fallthrough
		case sparkplug.DBIRTH:
			if births == nil {
				continue // birth-order reports it
			}
			for _, x := range m.p.Metrics {
				if x.DataType == nil || x.Type == "" {
					v.add(m, "%s %s: datatype %v, not one of Sparkplug's", m.topic.Type, metricLabel(x), x.DataType)
				}
				births.declare(m.topic.Device, x)
			}
		case sparkplug.NDATA, sparkplug.DDATA:
			if births == nil {
				continue
			}
			for _, x := range m.p.Metrics {
				d, ok := births.lookup(m.topic.Device, x)
				switch {
				case !ok:
					v.add(m, "%s: %s not declared in the BIRTH", m.where(), metricLabel(x))
				case x.DataType != nil && x.Type != d.typ:
					v.add(m, "%s: %s declared %s in the BIRTH, sent as %s (value in %s; Tahu reads the value as %v)",
						m.where(), d.label, d.typ, x.Type, x.ValueField, x.Value)
				}
			}
		}
	}
	v.report(t)
}

// checkTahuAliases: an alias is unique across the edge node's whole set of
// metrics (the NBIRTH and all DBIRTHs); a BIRTH gives every metric both a
// name and an alias; NDATA and DDATA give the alias only (§6.4.6,
// tck-id-payloads-alias-uniqueness, -birth-requirement,
// -data-cmd-requirement).
func checkTahuAliases(t *testing.T, ms []tahuMessage) {
	v := newViolations("aliases")
	var holder map[uint64]string
	for _, m := range ms {
		switch m.topic.Type {
		case sparkplug.NBIRTH:
			holder = map[uint64]string{}
			fallthrough
		case sparkplug.DBIRTH:
			if holder == nil {
				continue
			}
			for _, x := range m.p.Metrics {
				if x.Name == nil || x.Alias == nil {
					v.add(m, "%s: %s lacks a name or an alias", m.where(), metricLabel(x))
					continue
				}
				at := m.topic.Device + " " + *x.Name
				if prev, ok := holder[*x.Alias]; ok && prev != at {
					v.add(m, "alias %d of %s already belongs to %s", *x.Alias, at, prev)
				}
				holder[*x.Alias] = at
			}
		case sparkplug.NDATA, sparkplug.DDATA:
			for _, x := range m.p.Metrics {
				if x.Name != nil || x.Alias == nil {
					v.add(m, "%s: %s, want the alias only", m.where(), metricLabel(x))
				}
			}
		}
	}
	v.report(t)
}

// checkTahuTimestamps: NBIRTH, DBIRTH, NDATA and DDATA carry a payload
// timestamp, and every metric in them its own (§6.4.5, §6.4.6,
// tck-id-payloads-name-birth-data-requirement); timestamps are UTC
// milliseconds, so within the test's run.
func checkTahuTimestamps(t *testing.T, ms []tahuMessage) {
	v := newViolations("timestamps")
	lo, hi := uint64(time.Now().Add(-time.Hour).UnixMilli()), uint64(time.Now().Add(time.Minute).UnixMilli())
	plausible := func(m tahuMessage, what string, ts uint64) {
		if ts < lo || ts > hi {
			v.add(m, "%s %s timestamp %d is not UTC milliseconds of this test's run", m.topic.Type, what, ts)
		}
	}
	for _, m := range ms {
		if m.topic.Type == sparkplug.NDEATH {
			continue
		}
		if m.p.Timestamp == nil {
			v.add(m, "%s without a payload timestamp", m.where())
		} else {
			plausible(m, "payload", *m.p.Timestamp)
		}
		var missing []string
		for _, x := range m.p.Metrics {
			if x.Timestamp == nil {
				missing = append(missing, metricLabel(x))
			} else {
				plausible(m, metricLabel(x), *x.Timestamp)
			}
		}
		if len(missing) > 0 {
			v.add(m, "%s: %d of %d metrics without a timestamp: %s", m.where(), len(missing), len(m.p.Metrics), strings.Join(missing, ", "))
		}
	}
	v.report(t)
}

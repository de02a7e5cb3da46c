package docs

// How the MQTT reference reduces captured messages to the patterns it
// documents: topics to placeholders, payloads to their fields.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/contract"
)

// normalizer turns the topics of the representative configuration into
// the placeholders the reference uses.
type normalizer struct {
	devices, signals []string
}

func newNormalizer(model *mqtt.Model) normalizer {
	var n normalizer
	for _, d := range model.Devices {
		n.devices = append(n.devices, d.Name)
		for _, s := range d.Signals {
			n.signals = append(n.signals, s.Name)
		}
	}
	return n
}

func (n normalizer) topic(t string) string {
	t = strings.Replace(t, mqttRoot, "ecagent/<site>/<host>", 1)
	if rest, ok := strings.CutPrefix(t, sparkplug.Namespace+"/"+mqttGroup+"/"); ok {
		typ, node, _ := strings.Cut(rest, "/")
		t = sparkplug.Namespace + "/<group>/" + typ + "/" + strings.Replace(node, mqttNode, "<node>", 1)
	}
	levels := strings.Split(t, "/")
	for i, l := range levels {
		switch {
		case slices.Contains(n.devices, l):
			levels[i] = "<slave>"
		case slices.Contains(n.signals, l):
			levels[i] = "<signal>"
		}
	}
	return strings.Join(levels, "/")
}

// jsonFields lists the fields of a JSON object payload, flattened: a
// nested object's fields as key.sub, a map keyed by signal names as
// key.<signal>, the fields of an array's objects as key[].sub. A payload
// that is not an object is listed as "=" and its text. kind is the
// payload's "kind", if any.
func (n normalizer) jsonFields(payload []byte) (fields []string, kind string) {
	var obj map[string]any
	if err := json.Unmarshal(payload, &obj); err != nil {
		return []string{"=" + string(payload)}, ""
	}
	keys := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	for _, k := range keys(obj) {
		switch v := obj[k].(type) {
		case map[string]any:
			sub := keys(v)
			if len(sub) > 0 && !slices.ContainsFunc(sub, func(s string) bool { return !slices.Contains(n.signals, s) }) {
				fields = append(fields, k+".<signal>")
				continue
			}
			for _, s := range sub {
				fields = append(fields, k+"."+s)
			}
		case []any:
			fields = append(fields, k+"[]")
			for _, e := range v {
				if m, ok := e.(map[string]any); ok {
					for _, s := range keys(m) {
						fields = union(fields, []string{k + "[]." + s})
					}
				}
			}
		default:
			fields = append(fields, k)
		}
	}
	kind, _ = obj["kind"].(string)
	return fields, kind
}

// renderFields writes flattened fields as Markdown: key, key{sub,…} for
// the fields of a nested object, key[]{sub,…} for an array of objects,
// and text payloads as their values.
func renderFields(fields []string) string {
	var texts, order []string
	subs := map[string][]string{}
	for _, f := range fields {
		if t, ok := strings.CutPrefix(f, "="); ok {
			texts = append(texts, "`"+t+"`")
			continue
		}
		key, sub := f, ""
		if i := strings.IndexAny(f, ".["); i >= 0 {
			key, sub = f[:i], strings.TrimPrefix(strings.TrimPrefix(f[i:], "[]"), ".")
			if strings.HasPrefix(f[i:], "[]") {
				key += "[]"
			}
		}
		if _, ok := subs[key]; !ok {
			order = append(order, key)
			subs[key] = nil
		}
		if sub != "" && !slices.Contains(subs[key], sub) {
			subs[key] = append(subs[key], sub)
		}
	}
	var out []string
	if len(texts) > 0 {
		out = append(out, strings.Join(texts, " or ")+" (text)")
	}
	for _, k := range order {
		sort.Strings(subs[k])
		switch {
		case len(subs[k]) == 1 && subs[k][0] == "<signal>":
			out = append(out, "`"+k+"` (by signal)")
		case len(subs[k]) > 0:
			out = append(out, "`"+k+"` {`"+strings.Join(subs[k], "`, `")+"`}")
		default:
			out = append(out, "`"+k+"`")
		}
	}
	return strings.Join(out, ", ")
}

// sparkplugFields lists a Sparkplug payload: seq, timestamp and its
// metrics by name (the signals as <signal>), or by alias.
func (n normalizer) sparkplugFields(payload []byte) []string {
	var p sparkplug.Payload
	if err := sparkplug.DecodePayload(payload, &p); err != nil {
		return []string{"(not a Sparkplug payload)"}
	}
	var out []string
	if p.Timestamp != 0 {
		out = append(out, "timestamp")
	}
	if p.HasSeq {
		out = append(out, "seq")
	}
	for _, m := range p.Metrics {
		var f string
		switch {
		case slices.Contains(n.signals, m.Name), strings.HasPrefix(m.Name, "Inputs/"), strings.HasPrefix(m.Name, "Outputs/"):
			f = "metrics[].Inputs|Outputs/<signal> (name, alias, value, engUnit)"
		case m.Name != "":
			f = "metrics[]." + m.Name
		default:
			f = "metrics[].by alias"
		}
		if m.Historical {
			f += " (is_historical)"
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func patterns(msgs []message, retained map[string]bool, n normalizer) []*pattern {
	byTopic := map[string]*pattern{}
	var order []string
	for _, m := range msgs {
		if strings.Contains(m.topic, "/set/") {
			continue // the writes this generator sent: inbound, listed apart
		}
		topic := n.topic(m.topic)
		p := byTopic[topic]
		if p == nil {
			p = &pattern{topic: topic, kinds: map[string][]string{}}
			byTopic[topic] = p
			order = append(order, topic)
		}
		if !slices.Contains(p.qos, int(m.qos)) {
			p.qos = append(p.qos, int(m.qos))
		}
		p.retained = p.retained || retained[m.topic]
		var fields []string
		if strings.HasPrefix(m.topic, sparkplug.Namespace+"/") {
			fields = n.sparkplugFields(m.payload)
		} else {
			var kind string
			fields, kind = n.jsonFields(m.payload)
			if kind != "" {
				p.kinds[kind] = union(p.kinds[kind], fields)
				continue
			}
		}
		p.fields = union(p.fields, fields)
	}
	sort.Strings(order)
	out := make([]*pattern, 0, len(order))
	for _, t := range order {
		sort.Ints(byTopic[t].qos)
		out = append(out, byTopic[t])
	}
	return out
}

func union(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}

func renderTopics(ps []*pattern, withEvents bool) string {
	var b strings.Builder
	b.WriteString("| topic | QoS | retained | payload fields |\n|---|---|---|---|\n")
	var events *pattern
	for _, p := range ps {
		var qos []string
		for _, q := range p.qos {
			qos = append(qos, fmt.Sprint(q))
		}
		ret := "no"
		if p.retained {
			ret = "yes"
		}
		fields := renderFields(p.fields)
		if len(p.kinds) > 0 {
			events = p
			fields = "`kind` and the fields of the kind (below)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p.topic, strings.Join(qos, ", "), ret, cell(fields))
	}
	if events != nil && !withEvents {
		fmt.Fprintf(&b, "\nThe events on `%s` are those of the JSON scheme.\n", events.topic)
	}
	if events != nil && withEvents {
		fmt.Fprintf(&b, "\nEvents seen on `%s` in this run, by kind:\n\n| kind | fields |\n|---|---|\n", events.topic)
		var kinds []string
		for k := range events.kinds {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			fmt.Fprintf(&b, "| `%s` | %s |\n", k, cell(renderFields(events.kinds[k])))
		}
	}
	return b.String()
}

// inbound lists the topics the publisher takes writes and commands on,
// from the meta payloads' set_topic (JSON) and the Sparkplug topic
// builders.
func inbound(t *testing.T, msgs []message, n normalizer) string {
	var set []string
	for _, m := range msgs {
		if !strings.Contains(m.topic, "/meta/") {
			continue
		}
		var meta struct {
			Signals []struct {
				SetTopic string `json:"set_topic"`
			} `json:"signals"`
		}
		if err := json.Unmarshal(m.payload, &meta); err != nil {
			t.Fatalf("meta payload on %s: %v", m.topic, err)
		}
		for _, s := range meta.Signals {
			if s.SetTopic != "" {
				set = union(set, []string{n.topic(s.SetTopic)})
			}
		}
	}
	if len(set) == 0 {
		t.Fatal("no meta payload named a set_topic: the writes allowed in the representative configuration were not published")
	}
	return fmt.Sprintf("| topic | what |\n|---|---|\n| %s | a write to an allowed output (JSON scheme) |\n| `%s` | a write to an output (Sparkplug B) |\n| `%s` | `Node Control/Rebirth` (Sparkplug B) |\n",
		codeList(set), n.topic(sparkplug.DeviceTopic(mqttGroup, sparkplug.DCMD, mqttNode, n.devices[0])),
		n.topic(sparkplug.NodeTopic(mqttGroup, sparkplug.NCMD, mqttNode)))
}

// checkEventKinds fails for an event on …/events whose kind is no row of
// the event catalogue, or a row that says it is not published, and for a
// row the cycle process publishes that the run did not show.
func checkEventKinds(t *testing.T, ps []*pattern) {
	t.Helper()
	var seen map[string][]string
	for _, p := range ps {
		if strings.HasSuffix(p.topic, "/events") {
			seen = p.kinds
		}
	}
	for kind := range seen {
		if e, ok := contract.EventNamed(kind); !ok || e.Route == contract.RouteNone {
			t.Errorf("event kind %q on …/events: no row of the event catalogue (package contract) publishes it", kind)
		}
	}
	for _, e := range contract.Events() {
		if _, ok := seen[e.Name]; !ok && e.Origin == contract.OriginCycle && e.Route != contract.RouteNone {
			t.Errorf("the catalogue publishes %s on …/events, the run did not", e.Name)
		}
	}
}

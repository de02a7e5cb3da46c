package docs

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/agent/mqtt"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// TestSparkplugSpikeMetricsTable: the table of the spike node metrics in
// mqtt.md lists exactly the Spikes/… metrics the Sparkplug NBIRTH
// declares, each with the datatype it declares.
func TestSparkplugSpikeMetricsTable(t *testing.T) {
	birth := mqtt.NewSparkplugRenderer(mqtt.SparkplugOptions{Group: mqttGroup, Node: mqttNode, Root: mqttRoot}).Announce(nil, nil, 0)
	var p sparkplug.Payload
	if err := sparkplug.DecodePayload(birth[0].Payload, &p); err != nil {
		t.Fatal(err)
	}
	declared := map[string]string{}
	for _, m := range p.Metrics {
		if strings.HasPrefix(m.Name, "Spikes/") {
			declared[m.Name] = m.DataType.String()
		}
	}
	doc, err := os.ReadFile("mqtt.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, row := range regexp.MustCompile("(?m)^\\| `(Spikes/[^`]+)` \\| (\\w+) \\|").FindAllStringSubmatch(string(doc), -1) {
		documented[row[1]] = row[2]
	}
	for name, typ := range declared {
		if documented[name] != typ {
			t.Errorf("mqtt.md: %s is %q, NBIRTH declares it %s", name, documented[name], typ)
		}
	}
	for name := range documented {
		if _, ok := declared[name]; !ok {
			t.Errorf("mqtt.md lists %s, which NBIRTH does not declare", name)
		}
	}
	if len(declared) == 0 {
		t.Error("NBIRTH declares no Spikes/… metric")
	}
}

package sparkplug_test

import (
	"strings"
	"testing"

	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// FuzzParseTopic: ParseTopic never panics, and a topic it accepts has four
// or five non-empty levels under spBv1.0 that NodeTopic or DeviceTopic
// build back into the same string.
func FuzzParseTopic(f *testing.F) {
	for _, s := range []string{
		"spBv1.0/plant/NCMD/edge1", "spBv1.0/plant/DCMD/edge1/EL2004-1", "spBv1.0/plant/DCMD/edge1/EL2004-1/x",
		"spBv1.0//NCMD/n", "spAv1.0/g/NCMD/n", "spBv1.0/g/NCMD", "", "spBv1.0/g/NCMD/n/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tp, ok := sparkplug.ParseTopic(s)
		if !ok {
			if tp != (sparkplug.Topic{}) {
				t.Fatalf("refused %q with %+v", s, tp)
			}
			return
		}
		back := sparkplug.NodeTopic(tp.Group, tp.Type, tp.Node)
		if tp.Device != "" {
			back = sparkplug.DeviceTopic(tp.Group, tp.Type, tp.Node, tp.Device)
		}
		if back != s {
			t.Fatalf("ParseTopic(%q) = %+v, which builds %q", s, tp, back)
		}
		for _, level := range []string{tp.Group, string(tp.Type), tp.Node} {
			if level == "" || strings.Contains(level, "/") {
				t.Fatalf("ParseTopic(%q) = %+v", s, tp)
			}
		}
	})
}

package test

import (
	"regexp"
	"strings"
	"testing"
)

// metricsTree matches the packages of the Prometheus and OpenTelemetry
// exporters, which the MQTT publisher must not hold: it renders the
// window statistics from package cyclestats, as they do.
var metricsTree = regexp.MustCompile(`^` + regexp.QuoteMeta(module) + `/agent/metrics(/|$)`)

// TestMQTTClosure fails when the dependency closure of any package under
// agent/mqtt/ takes in a package under agent/metrics/, directly or through another
// package, naming the import chain that brought it.
func TestMQTTClosure(t *testing.T) {
	graph, order := depGraph(t, "./agent/mqtt/...")
	roots := 0
	for _, p := range order {
		if !strings.HasPrefix(p, module+"/agent/mqtt") {
			continue
		}
		roots++
		if chain := closureHolds(graph, p, metricsTree); chain != nil {
			t.Errorf("%s holds %s", p, strings.Join(chain, " → "))
		}
	}
	if roots < 5 {
		t.Fatalf("found %d packages under agent/mqtt/; there are more", roots)
	}
}

// TestMQTTClosureCheckSeesMetrics is the control: the agent holds the
// exporters, and the check finds them with a chain from it.
func TestMQTTClosureCheckSeesMetrics(t *testing.T) {
	const root = module + "/agent"
	graph, _ := depGraph(t, "./agent")
	chain := closureHolds(graph, root, metricsTree)
	if len(chain) < 2 || chain[0] != root || !metricsTree.MatchString(chain[len(chain)-1]) {
		t.Errorf("the check does not find metrics in the agent's closure: chain %v", chain)
	}
}

// closureHolds returns a shortest import chain from root to a package of
// its closure that pattern matches, nil when there is none.
func closureHolds(graph map[string][]string, root string, pattern *regexp.Regexp) []string {
	return shortestImportPath(graph, root, func(p string) bool { return p != root && pattern.MatchString(p) })
}

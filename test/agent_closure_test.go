package test

import (
	"strings"
	"testing"
)

// bodyTrees are the trees of the cycle process's body (and of the
// simulator, a process of its own), none of which the agent may hold; the
// protocol's stateless codecs that every process shares live under
// ethercat/.
var bodyTrees = []string{"cycle/...", "master/...", "sim/..."}

// cycleBody reports whether the package p (an import path) is part of the
// cycle process's body, which the agent must not hold.
func cycleBody(p string) bool {
	rel, ok := strings.CutPrefix(p, module+"/")
	if !ok {
		return false
	}
	for _, tree := range bodyTrees {
		if match(tree, rel) {
			return true
		}
	}
	return false
}

// bodyDeps returns, for each package of the cycle process's body in the
// closure, the shortest import chain from one of roots.
func bodyDeps(graph map[string][]string, order, roots []string) [][]string {
	var out [][]string
	for _, p := range order {
		if !cycleBody(p) {
			continue
		}
		var best []string
		for _, r := range roots {
			if chain := importChain(graph, r, p); chain[1] != "…" && (best == nil || len(chain) < len(best)) {
				best = chain
			}
		}
		out = append(out, best)
	}
	return out
}

// packagesUnder lists the packages of order under the module-relative dir.
func packagesUnder(order []string, dir string) []string {
	var out []string
	for _, p := range order {
		if rel, ok := strings.CutPrefix(p, module+"/"); ok && match(dir+"/...", rel) {
			out = append(out, p)
		}
	}
	return out
}

// TestAgentHoldsNothingOfTheCycleProcess fails when the dependency
// closure of the agent's packages (go list -deps ./agent/...) takes in a
// package of the cycle process's body — the cycle engine, the cycle
// program, the master, its links, DC or drive logic, the simulator —
// naming the import chain that brought it. The two processes share shm,
// contract and the protocol codecs only.
func TestAgentHoldsNothingOfTheCycleProcess(t *testing.T) {
	graph, order := depGraph(t, "./agent/...")
	roots := packagesUnder(order, "agent")
	if len(roots) < 5 {
		t.Fatalf("found %d agent packages in the closure; there are more", len(roots))
	}
	for _, chain := range bodyDeps(graph, order, roots) {
		t.Errorf("the agent holds %s of the cycle process: %s", chain[len(chain)-1], strings.Join(chain, " → "))
	}
}

// TestAgentClosureCheckSeesTheCycle is the control: the cycle program's
// closure holds the cycle process's body, and ecagent's (the toolbox's
// simulator, the hidden cycle mode) the simulator and the cycle process
// too; the check finds them with a chain from the program's main package.
func TestAgentClosureCheckSeesTheCycle(t *testing.T) {
	found := bodyFound(t, "cmd/ecagent-cycle")
	for _, want := range []string{"cycle", "cycle/process", "cycle/rt", "master", "master/link", "master/dc", "master/cia402"} {
		if !found[module+"/"+want] {
			t.Errorf("the check does not find %s in the cycle program's closure", want)
		}
	}
	toolbox := bodyFound(t, "cmd/ecagent")
	for _, want := range []string{"sim", "cycle/process"} {
		if !toolbox[module+"/"+want] {
			t.Errorf("the check does not find %s in ecagent's closure", want)
		}
	}
	for _, codec := range []string{"ethercat/wire", "ethercat/esc", "ethercat/cia402/state"} {
		if found[module+"/"+codec] {
			t.Errorf("the check takes the codec %s for the cycle process's body", codec)
		}
	}
}

// bodyFound is what the check finds of the cycle process's body in the
// closure of the module-relative main package dir, each with a chain from
// it.
func bodyFound(t *testing.T, dir string) map[string]bool {
	t.Helper()
	root := module + "/" + dir
	graph, order := depGraph(t, "./"+dir)
	found := map[string]bool{}
	for _, chain := range bodyDeps(graph, order, []string{root}) {
		found[chain[len(chain)-1]] = true
		if chain[0] != root || len(chain) < 2 {
			t.Errorf("chain %v does not start at %s", chain, root)
		}
	}
	return found
}

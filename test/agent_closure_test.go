package test

import (
	"strings"
	"testing"
)

// bodyTrees are the trees of the cycle process's body (and of the
// simulator, a process of its own), none of which the agent may hold.
var bodyTrees = []string{"cycle/...", "master/...", "sim/..."}

// sharedCodecs are the stateless codecs under bodyTrees that every
// process may use: the CiA 402 drive states. (The other protocol codecs
// live under ethercat/.)
var sharedCodecs = []string{"master/cia402/state"}

// cycleBody reports whether the package p (an import path) is part of the
// cycle process's body, which the agent must not hold: anything under
// bodyTrees but sharedCodecs.
func cycleBody(p string) bool {
	rel, ok := strings.CutPrefix(p, module+"/")
	if !ok {
		return false
	}
	for _, c := range sharedCodecs {
		if rel == c {
			return false
		}
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
// closure holds the cycle process's body, and the check finds it with a
// chain from the program's main package.
func TestAgentClosureCheckSeesTheCycle(t *testing.T) {
	const root = module + "/cmd/ecagent-cycle"
	graph, order := depGraph(t, "./cmd/ecagent-cycle")
	found := map[string]bool{}
	for _, chain := range bodyDeps(graph, order, []string{root}) {
		found[chain[len(chain)-1]] = true
		if chain[0] != root || len(chain) < 2 {
			t.Errorf("chain %v does not start at %s", chain, root)
		}
	}
	for _, want := range []string{"cycle", "cycle/process", "cycle/rt", "master", "master/link", "master/dc", "master/cia402"} {
		if !found[module+"/"+want] {
			t.Errorf("the check does not find %s in the cycle program's closure", want)
		}
	}
	for _, codec := range append([]string{"ethercat/wire", "ethercat/esc"}, sharedCodecs...) {
		if found[module+"/"+codec] {
			t.Errorf("the check takes the codec %s for the cycle process's body", codec)
		}
	}
}

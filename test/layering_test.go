package test

import (
	"bufio"
	"bytes"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"
)

// module is the import path of this repository's module.
const module = "github.com/ecagent/ecagent"

// layer names the project packages one group of packages may import. The
// groups follow the data flow of ARCHITECTURE.md, one way only:
//
//	wire → link → master → cycle ⇄ shm ⇄ agent → metrics/mqtt
//
// A package matches the first rule whose pattern it has (a pattern "x/..."
// is x and everything below it). Its imports of other project packages must
// each match one of the rule's allowed patterns; its own subtree is always
// allowed, and so is the whole tree of a "x/..." rule, except where the
// rule lists a pattern under forbidden.
type layer struct {
	pattern   string
	allowed   []string
	forbidden []string // patterns inside the allowed set that still must not be imported
	why       string
}

// layers is the whole rule set. Changing it is changing the architecture:
// say why in the commit.
var layers = []layer{
	// The simulator is a device, not a master: it shares the protocol's
	// encoders with the master but never the master's logic, so a master
	// bug cannot hide behind a simulator that shares it.
	// The fault command language is a leaf, so that its fuzz binary links
	// only the parser.
	{pattern: "sim/faultcmd", allowed: nil,
		why: "the simulator's fault command language depends on the standard library only"},
	{pattern: "sim/...", allowed: []string{"ethercat/...", "master/link",
		"internal/pcapng"}, // the replay reads captures
		why: "the simulator models devices with the protocol encoders only, never the master"},
	{pattern: "master/...", allowed: []string{"master/...", "ethercat/...", "internal/realtime/..."}, forbidden: []string{"ethercat/eni", "ethercat/esi"},
		why: "the master knows nothing of the cycle process, shared memory, the agent, metrics or MQTT"},
	// The readers of the ETG's XML files (ESI, ENI) are leaves: whoever
	// wires them in converts their types.
	{pattern: "ethercat/eni", allowed: []string{"ethercat/internal/etgxml"},
		why: "the EtherCAT file readers depend on the standard library and their own XML reader only"},
	{pattern: "ethercat/esi", allowed: []string{"ethercat/internal/etgxml"},
		why: "the EtherCAT file readers depend on the standard library and their own XML reader only"},
	// The protocol: frames, ESC registers, SII, mailbox protocols. Both the
	// master and the simulator encode with it; it knows neither.
	{pattern: "ethercat/...", allowed: nil, forbidden: []string{"ethercat/eni", "ethercat/esi"},
		why: "the EtherCAT protocol's encoders depend on the standard library and each other only"},
	// What the two processes agree on besides the shared memory's layout:
	// the cycle configuration, the bus description, exit codes, the side
	// files, the bring-up report, the event catalogue.
	{pattern: "contract", allowed: nil,
		why: "what the two processes agree on (configuration, bus description, events …) is the leaf both build on, and every output renders"},
	{pattern: "shm", allowed: []string{"contract", "internal/realtime/monotime"},
		why: "the shared-memory layout builds on the contract and the monotonic clock only: both processes build on it"},
	{pattern: "agent/busstate", allowed: []string{"shm", "contract", "ethercat/esc", "ethercat/coe", "ethercat/cia402/state"},
		why: "the one state model of the bus folds shared-memory events; every output renders it"},
	// The cycle program is the whole cycle process: its closure must stay
	// free of the agent's libraries (test/cycle_closure_test.go), so it
	// reads its own configuration, not agent/config.
	{pattern: "cycle/process", allowed: []string{"cycle/...", "master/...", "ethercat/...", "shm", "contract", "internal/realtime/...", "internal/buildinfo"}, forbidden: []string{"sim", "ethercat/eni", "ethercat/esi"},
		why: "the cycle process's body runs the engine and the master on shared memory; it knows nothing of the agent"},
	{pattern: "cycle/...", allowed: []string{"master/...", "ethercat/...", "shm", "contract", "internal/realtime/..."}, forbidden: []string{"sim", "cycle/process", "ethercat/eni", "ethercat/esi"},
		why: "the cycle process runs the master and writes shared memory, nothing else"},
	{pattern: "agent/cyclestats/...", allowed: []string{"shm", "internal/jsonstr"},
		why: "what a cycle sample measures is defined once, from shared-memory samples; every output renders it, it renders none"},
	{pattern: "agent/metrics/...", allowed: []string{"shm", "contract", "agent/busstate", "agent/cyclestats/...", "ethercat/esc", "ethercat/cia402/state", "internal/jsonstr"},
		why: "exporters render shared-memory samples and register values; they never reach the master or the agent"},
	{pattern: "agent/mqtt/...", allowed: []string{"shm", "contract", "agent/busstate", "agent/cyclestats/...", "ethercat/esc", "ethercat/cia402/state", "internal/jsonstr"},
		forbidden: []string{"agent/metrics/..."},
		why:       "the MQTT publisher renders the samples' window statistics from cyclestats, as metrics does, and nothing of metrics"},
	{pattern: "agent/config", allowed: []string{"agent/mqtt/ruleparse", "contract"},
		why: "the configuration is made of the contract's types, validates the MQTT rule syntax, and nothing else"},
	{pattern: "agent/rtcheck", allowed: nil, why: "the host doctor reads the host only"},
	{pattern: "agent/spikes/tracefs", allowed: nil, why: "the tracefs instance and its binary pages need the kernel's files only"},
	{pattern: "agent/spikes", allowed: []string{"agent/spikes/tracefs", "shm", "contract"},
		why: "the spike forensics read the trace and the cycle's samples; the agent reports what they find"},
	{pattern: "agent/sdnotify", allowed: nil, why: "the systemd protocol needs nothing of ours"},
	// The agent holds nothing of the cycle process's body: nothing under
	// cycle/ or master/ (engine, master, links, DC, drive logic), no
	// simulator. It shares shm and contract with the cycle process, and
	// the protocol's stateless codecs (ethercat/...: AL states, drive
	// states, CoE meanings) with everyone; it alone reads ESI files
	// (agent/esinames). test/agent_closure_test.go checks the whole
	// closure too.
	{pattern: "agent/...", allowed: []string{"ethercat/...", "shm", "contract", "agent/..."},
		forbidden: []string{"cycle/...", "master/...", "sim/..."},
		why:       "the agent wires everything below it together and shares only shm, contract and the protocol codecs with the cycle process; nothing but commands import it"},
	{pattern: "internal/testsupport", allowed: nil,
		why: "the tests' shared helpers need the standard library only, so that any package's tests may use them"},
	{pattern: "internal/testsupport/...", allowed: []string{"master", "master/link", "sim", "ethercat/wire", "internal/pcapng",
		"contract", "cycle/maintenance"}, // cyclereap finds a cycle process by its segment and removes the segment's files
		why: "test helpers that bring up a simulated bus, read real captures, or reap the cycle processes tests leave behind"},
	{pattern: "internal/...", allowed: nil, why: "small helpers with no project dependencies"},
	{pattern: "cmd/ecagent-cycle", allowed: []string{"cycle/...", "master/...", "ethercat/...", "shm", "contract", "internal/realtime/...", "internal/buildinfo"}, forbidden: []string{"sim", "ethercat/eni", "ethercat/esi"},
		why: "the cycle program is the cycle process and nothing of the agent"},
	{pattern: "cmd/...", allowed: []string{"..."}, why: "commands sit on top of everything"},
	{pattern: "scripts/...", allowed: []string{"..."}, why: "benches and tools run beside the commands, on top of everything"},
	{pattern: "dashboards", allowed: nil, why: "dashboards are built from their own definitions"},
}

// match reports whether the project-relative package p matches pattern.
func match(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

// TestImportsPointOneWay lists the non-test imports of every package in
// the module (go list) and fails for each import of a project package
// that the package's layer does not allow.
func TestImportsPointOneWay(t *testing.T) {
	graph := projectImports(t)
	if len(graph) < 20 {
		t.Fatalf("go list found %d packages; the module has more", len(graph))
	}
	var pkgs []string
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		rule, ok := ruleFor(p)
		if !ok {
			if len(graph[p]) > 0 {
				t.Errorf("package %s imports %v but no layer rule covers it: add one to layers", p, graph[p])
			}
			continue
		}
		for _, imp := range graph[p] {
			if !allowedImport(rule, p, imp) {
				t.Errorf("%s imports %s: not allowed (%s)", p, imp, rule.why)
			}
		}
	}
}

// TestLayerRules checks the rule matcher itself on imports that must pass
// and imports that must fail, so a broken matcher cannot pass every
// package.
func TestLayerRules(t *testing.T) {
	cases := []struct {
		pkg, imp string
		ok       bool
	}{
		{"master", "ethercat/wire", true},
		{"master", "shm", false},
		{"ethercat/wire", "agent/metrics", false},
		{"sim", "master", false},
		{"sim", "ethercat/esc", true},
		{"sim", "sim/faultcmd", true},
		{"sim/faultcmd", "ethercat/wire", false},
		{"sim/faultcmd", "sim", false},
		{"shm", "ethercat/esc", false},
		{"ethercat/esi", "ethercat/internal/etgxml", true},
		{"ethercat/eni", "ethercat/sii", false},
		{"shm", "contract", true},
		{"contract", "shm", false},
		{"contract", "ethercat/esc", false},
		{"contract", "master/link", false},
		{"contract", "agent/config", false},
		{"cycle/process", "contract", true},
		{"agent/config", "contract", true},
		{"agent/config", "master/link", false},
		{"cycle", "contract", true},
		{"agent/busstate", "contract", true},
		{"agent/mqtt", "contract", true},
		{"cycle", "shm", true},
		{"cycle", "sim", false},
		{"cycle", "agent", false},
		{"cycle", "agent/metrics", false},
		{"cycle", "cycle/process", false},
		{"cycle/process", "cycle", true},
		{"cycle/process", "cycle/rt", true},
		{"cycle/process", "master/cia402", true},
		{"cycle/process", "shm", true},
		{"cycle/process", "agent", false},
		{"cycle/process", "agent/config", false},
		{"cycle/process", "sim", false},
		{"cycle/process", "agent/metrics", false},
		{"agent", "cycle/process", false},
		{"agent", "cycle/rt", false},
		{"agent/bench", "cycle", false},
		{"agent", "master", false},
		{"agent", "master/link", false},
		{"agent", "sim", false},
		{"agent", "sim/faultcmd", false},
		{"agent", "master/dc", false},
		{"agent", "master/cia402", false},
		{"agent", "ethercat/esc", true},
		{"agent", "ethercat/cia402/state", true},
		{"agent", "master/cia402/state", false},
		{"agent/busstate", "master/cia402", false},
		{"agent/mqtt", "cycle", false},
		{"agent/metrics", "sim", false},
		{"agent/config", "cycle/process", false},
		{"agent/bench", "cycle/process", false},
		{"agent/bench", "sim/replay", false},
		{"agent", "contract", true},
		{"cmd/ecagent-cycle", "cycle/process", true},
		{"cmd/ecagent-cycle", "agent", false},
		{"cmd/ecagent-cycle", "agent/config", false},
		{"cmd/ecagent-cycle", "sim", false},
		{"agent/metrics", "shm", true},
		{"agent/metrics", "agent/busstate", true},
		{"agent/busstate", "agent/metrics", false},
		{"agent/busstate", "master", false},
		{"agent/metrics", "agent", false},
		{"agent/metrics", "cycle", false},
		{"agent/metrics", "agent/mqtt", false},
		{"agent/metrics/otlp", "agent/metrics", true},
		{"agent/metrics", "agent/cyclestats", true},
		{"agent/metrics/otlp", "agent/cyclestats", true},
		{"agent/cyclestats", "shm", true},
		{"agent/cyclestats", "agent/cyclestats/stats", true},
		{"agent/cyclestats", "agent/metrics", false},
		{"agent/cyclestats", "agent/mqtt", false},
		{"agent/cyclestats/stats", "agent/metrics", false},
		{"agent/cyclestats", "agent/busstate", false},
		{"agent/mqtt", "agent/cyclestats", true},
		{"agent/mqtt", "agent/cyclestats/stats", true},
		{"agent/mqtt", "agent/metrics", false},
		{"agent/mqtt/sparkplug", "agent/metrics", false},
		{"agent/mqtt", "agent/metrics/otlp", false},
		{"agent/mqtt", "master", false},
		{"agent", "agent/mqtt", true},
		{"agent", "cmd/ecagent", false},
		{"cmd/ecagent", "agent", true},
		{"internal/testsupport", "master", false},
		{"internal/testsupport/capture", "ethercat/wire", true},
		{"internal/testsupport/capture", "internal/testsupport", true},
		{"agent/mqtt/mqtttest", "internal/testsupport", true},
		{"master", "internal/testsupport", false},
		{"agent", "internal/testsupport", false},
		{"cmd/ecagent", "internal/testsupport", false},
		{"cmd/ecagent", "internal/testsupport/capture", false},
	}
	for _, c := range cases {
		rule, ok := ruleFor(c.pkg)
		if !ok {
			t.Errorf("no rule for %s", c.pkg)
			continue
		}
		if got := allowedImport(rule, c.pkg, c.imp); got != c.ok {
			t.Errorf("%s importing %s: allowed = %v, want %v", c.pkg, c.imp, got, c.ok)
		}
	}
}

func ruleFor(p string) (layer, bool) {
	for _, l := range layers {
		if match(l.pattern, p) {
			return l, true
		}
	}
	return layer{}, false
}

// testOnly is the tree of test helpers: only tests and the test helper
// packages of other trees (named …test, e.g. agent/mqtt/mqtttest) may import it.
const testOnly = "internal/testsupport/..."

func allowedImport(rule layer, p, imp string) bool {
	if match(testOnly, imp) && !match(testOnly, p) {
		return strings.HasSuffix(path.Base(p), "test") // test helpers only in other test helpers
	}
	for _, f := range rule.forbidden {
		if match(f, imp) {
			return false
		}
	}
	if imp == p || strings.HasPrefix(imp, p+"/") {
		return true // its own subtree
	}
	if strings.HasSuffix(rule.pattern, "/...") && match(rule.pattern, imp) {
		return true // the group's own tree, e.g. agent/metrics/otlp → metrics
	}
	for _, a := range rule.allowed {
		if match(a, imp) {
			return true
		}
	}
	return false
}

// projectImports returns, for every package of the module, the project
// packages it imports (outside its tests), both relative to the module.
func projectImports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", module+"/...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		p := rel(fields[0])
		graph[p] = nil
		for _, imp := range fields[1:] {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				graph[p] = append(graph[p], rel(imp))
			}
		}
	}
	return graph
}

func rel(importPath string) string {
	if importPath == module {
		return "."
	}
	return path.Clean(strings.TrimPrefix(importPath, module+"/"))
}

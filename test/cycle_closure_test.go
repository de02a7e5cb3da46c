package test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// cycleForbidden are the packages the cycle process must not hold: the
// agent's libraries, each of which costs the cycle memory (and most of
// them goroutines, timers or init work) for nothing it does.
var cycleForbidden = []struct {
	pattern *regexp.Regexp
	what    string
}{
	{regexp.MustCompile(`^net/http(/|$)`), "HTTP"},
	{regexp.MustCompile(`^crypto(/|$)`), "crypto (TLS, crypto/rand)"},
	{regexp.MustCompile(`^google\.golang\.org/(grpc|protobuf)(/|$)`), "gRPC and protobuf (OTLP)"},
	{regexp.MustCompile(`^go\.opentelemetry\.io/`), "OpenTelemetry"},
	{regexp.MustCompile(`mqtt`), "MQTT (paho, mochi-mqtt, our mqtt/)"},
	{regexp.MustCompile(`^github\.com/prometheus/`), "Prometheus"},
	{regexp.MustCompile(`yaml`), "YAML"},
	{regexp.MustCompile(`koanf`), "koanf"},
	{regexp.MustCompile(`pflag`), "pflag"},
	{regexp.MustCompile(`^` + regexp.QuoteMeta(module) + `/(agent|metrics|busstate|dashboards)(/|$)`), "the agent's packages"},
}

// maxCycleDeps bounds the number of packages in the cycle program's
// closure (105 with Go 1.26, almost all of them the standard library's):
// a new dependency that none of cycleForbidden names still shows here.
// Raise it knowingly.
const maxCycleDeps = 140

// TestCycleProgramClosure fails when the dependency closure of
// cmd/ecagent-cycle takes in one of the agent's libraries, naming the
// import chain that brought it, or grows past maxCycleDeps packages.
func TestCycleProgramClosure(t *testing.T) {
	graph, order := depGraph(t, "./cmd/ecagent-cycle")
	t.Logf("cmd/ecagent-cycle depends on %d packages", len(order))
	for _, f := range forbiddenDeps(graph, order, module+"/cmd/ecagent-cycle") {
		t.Errorf("the cycle program holds %s: %s", f.what, strings.Join(f.chain, " → "))
	}
	if len(order) > maxCycleDeps {
		t.Errorf("the cycle program depends on %d packages, more than %d: go list -deps ./cmd/ecagent-cycle says which are new", len(order), maxCycleDeps)
	}
}

// TestCycleClosureCheckSeesTheAgent is the control: the agent's closure
// holds every library the cycle must not, and the check finds them with
// a chain from the agent's main package.
func TestCycleClosureCheckSeesTheAgent(t *testing.T) {
	const root = module + "/cmd/ecagent"
	graph, order := depGraph(t, "./cmd/ecagent")
	found := map[string]bool{}
	for _, f := range forbiddenDeps(graph, order, root) {
		found[f.what] = true
		if f.chain[0] != root || len(f.chain) < 2 {
			t.Errorf("chain %v does not start at %s", f.chain, root)
		}
	}
	for _, want := range []string{"HTTP", "crypto (TLS, crypto/rand)", "Prometheus", "YAML", "koanf", "pflag", "the agent's packages"} {
		if !found[want] {
			t.Errorf("the check does not find %s in the agent's closure", want)
		}
	}
}

// finding is one forbidden package with the import chain that reaches it.
type finding struct {
	what  string
	chain []string // root → … → the package
}

// forbiddenDeps returns, for each cycleForbidden pattern that packages of
// the closure match, the one nearest to root with its import chain: the
// import to undo.
func forbiddenDeps(graph map[string][]string, order []string, root string) []finding {
	var out []finding
	for _, f := range cycleForbidden {
		var best []string
		for _, p := range order {
			if f.pattern.MatchString(p) {
				if chain := importChain(graph, root, p); best == nil || len(chain) < len(best) {
					best = chain
				}
			}
		}
		if best != nil {
			out = append(out, finding{what: f.what, chain: best})
		}
	}
	return out
}

// importChain is a shortest path of imports from root to target.
func importChain(graph map[string][]string, root, target string) []string {
	if chain := shortestImportPath(graph, root, func(p string) bool { return p == target }); chain != nil {
		return chain
	}
	return []string{root, "…", target}
}

// shortestImportPath is a shortest path of imports from root (included)
// to a package of its closure that found holds for, nil when there is
// none.
func shortestImportPath(graph map[string][]string, root string, found func(string) bool) []string {
	prev := map[string]string{root: ""}
	queue := []string{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if found(p) {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, imp := range graph[p] {
			if _, seen := prev[imp]; !seen {
				prev[imp] = p
				queue = append(queue, imp)
			}
		}
	}
	return nil
}

// depGraph lists pkg's dependency closure for Linux (go list -deps): each
// package's imports, and the packages in go list's order.
func depGraph(t *testing.T, pkg string) (map[string][]string, []string) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`, pkg)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "GOOS=linux")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	graph := map[string][]string{}
	var order []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		graph[fields[0]] = fields[1:]
		order = append(order, fields[0])
	}
	return graph, order
}

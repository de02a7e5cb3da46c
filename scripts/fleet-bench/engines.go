package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// proc is an engine the bench started.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
}

// engines are the real engines of the pipeline: Prometheus in agent mode
// scraping the fleet, the OpenTelemetry Collector receiving its pushes,
// two Thanos receivers on one hashring (the store), Thanos query over
// them (what Grafana reads) and Thanos rule evaluating the shipped rules
// through query and writing back into the store.
type engines struct {
	dir   string
	procs []*proc

	promWeb      string   // Prometheus agent's HTTP address
	receiveHTTP  []string // receivers' HTTP (metrics) addresses
	receiveWrite string   // remote-write URL of the first receiver
	queryHTTP    string
	ruleHTTP     string
	otlpHTTP     string // the collector's OTLP/HTTP endpoint
	otelTelem    string // the collector's own metrics
}

// binaries are the engines' executables.
type binaries struct{ prometheus, thanos, otelcol string }

// findBinaries looks each engine up in $(go env GOPATH)/bin, then $PATH
// (scripts/engines builds Thanos and the collector there; Prometheus is
// Debian's).
func findBinaries() (binaries, error) {
	var b binaries
	gobin := ""
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		gobin = filepath.Join(strings.TrimSpace(string(out)), "bin")
	}
	find := func(name string) (string, error) {
		if gobin != "" {
			if p := filepath.Join(gobin, name); isExecutable(p) {
				return p, nil
			}
		}
		p, err := exec.LookPath(name)
		if err != nil {
			return "", fmt.Errorf("%s not found in GOPATH/bin or PATH (scripts/engines builds thanos and otelcol-ecagent; apt-get install prometheus)", name)
		}
		return p, nil
	}
	var err error
	if b.prometheus, err = find("prometheus"); err != nil {
		return b, err
	}
	if b.thanos, err = find("thanos"); err != nil {
		return b, err
	}
	if b.otelcol, err = find("otelcol-ecagent"); err != nil {
		return b, err
	}
	return b, nil
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// freePorts reserves n loopback ports and releases them for the engines.
func freePorts(n int) ([]string, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var out []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// start runs one engine with its output in dir/name.log.
func (e *engines) start(name, bin string, env []string, args ...string) error {
	logPath := filepath.Join(e.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(append(os.Environ(), os.Getenv("FLEET_BENCH_ENGINE_ENV")), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", name, err)
	}
	f.Close()
	e.procs = append(e.procs, &proc{name: name, cmd: cmd, log: logPath})
	return nil
}

// stop ends every engine, last started first.
func (e *engines) stop() {
	for i := len(e.procs) - 1; i >= 0; i-- {
		p := e.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
			<-done
		}
	}
}

// tail returns the last lines of an engine's log, for an error message.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitReady polls url until it answers 200 or the deadline passes.
func (e *engines) waitReady(ctx context.Context, name, url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		for _, p := range e.procs {
			if p.name == name && p.cmd.ProcessState != nil {
				return fmt.Errorf("%s exited:\n%s", name, p.tail(20))
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	for _, p := range e.procs {
		if p.name == name {
			return fmt.Errorf("%s not ready at %s within %v:\n%s", name, url, within, p.tail(20))
		}
	}
	return fmt.Errorf("%s not ready within %v", name, within)
}

// timescale maps the shipped rules' time ranges onto the bench's run: the
// regression rules compare an hour with the same hour a week earlier,
// which the bench compresses into minutes (docs/deployment.md, "The fleet
// bench").
type timescale struct {
	window   time.Duration // replaces [1h]
	baseline time.Duration // replaces offset 1w
	forDur   time.Duration // replaces every for:
}

// rulesFor rewrites deploy/prometheus/ecagent.rules.yml for the bench:
// the hour windows, the week offset and the for: durations, nothing else.
func rulesFor(shipped []byte, ts timescale) []byte {
	s := string(shipped)
	s = strings.ReplaceAll(s, "[1h]", "["+promDuration(ts.window)+"]")
	s = strings.ReplaceAll(s, "offset 1w", "offset "+promDuration(ts.baseline))
	s = regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAllString(s, "${1} "+promDuration(ts.forDur))
	return []byte(s)
}

// promDuration spells d as a Prometheus duration (whole seconds or
// milliseconds).
func promDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// agentConfig is deploy/prometheus/agent.yml with the fleet's targets,
// the bench's intervals and the first receiver as the remote-write URL.
func agentConfig(shipped []byte, targets []string, scrape time.Duration, writeURL string) ([]byte, error) {
	var cfg map[string]any
	if err := yaml.Unmarshal(shipped, &cfg); err != nil {
		return nil, fmt.Errorf("agent.yml: %w", err)
	}
	global, _ := cfg["global"].(map[string]any)
	if global == nil {
		return nil, errors.New("agent.yml: no global section")
	}
	global["scrape_interval"] = promDuration(scrape)
	global["scrape_timeout"] = promDuration(min(scrape, 10*time.Second))
	jobs, _ := cfg["scrape_configs"].([]any)
	if len(jobs) != 1 {
		return nil, fmt.Errorf("agent.yml: %d scrape jobs, want 1 (ecagent)", len(jobs))
	}
	job := jobs[0].(map[string]any)
	job["static_configs"] = []any{map[string]any{"targets": targets}}
	rws, _ := cfg["remote_write"].([]any)
	if len(rws) != 1 {
		return nil, fmt.Errorf("agent.yml: %d remote_write entries, want 1", len(rws))
	}
	rw := rws[0].(map[string]any)
	rw["url"] = writeURL
	if q, ok := rw["queue_config"].(map[string]any); ok {
		q["batch_send_deadline"] = promDuration(min(scrape/2, 5*time.Second))
	}
	return yaml.Marshal(cfg)
}

// startEngines starts the whole store side and the collector, and
// returns once each answers; Prometheus is started by startScraper once
// the fleet's addresses are known.
func startEngines(ctx context.Context, dir string, bin binaries, rulesFile string, eval time.Duration, otlpInterval time.Duration) (*engines, error) {
	e := &engines{dir: dir}
	ports, err := freePorts(18)
	if err != nil {
		return nil, err
	}
	next := func() string { p := ports[0]; ports = ports[1:]; return p }
	grpcs, err := e.startReceivers(ctx, bin, next)
	if err == nil {
		err = e.startQuery(ctx, bin, next, grpcs)
	}
	if err == nil {
		err = e.startRule(ctx, bin, next, rulesFile, eval)
	}
	if err == nil {
		err = e.startCollector(ctx, bin, next, otlpInterval)
	}
	if err != nil {
		e.stop()
		return nil, err
	}
	return e, nil
}

// startReceivers starts two receivers on one hashring: each series lives
// on one of them (replication factor 1), the other forwards to it. It
// returns their gRPC addresses.
func (e *engines) startReceivers(ctx context.Context, bin binaries, next func() string) ([]string, error) {
	type recv struct{ http, grpc, write, capnp string }
	rs := []recv{{next(), next(), next(), next()}, {next(), next(), next(), next()}}
	ring := []map[string]any{{"hashring": "default", "endpoints": []string{rs[0].grpc, rs[1].grpc}}}
	ringJSON, _ := json.Marshal(ring)
	ringFile := filepath.Join(e.dir, "hashring.json")
	if err := os.WriteFile(ringFile, ringJSON, 0o644); err != nil {
		return nil, err
	}
	for i, r := range rs {
		name := fmt.Sprintf("receive-%d", i)
		if err := e.start(name, bin.thanos, nil, "receive",
			"--tsdb.path", filepath.Join(e.dir, name),
			"--http-address", r.http, "--grpc-address", r.grpc,
			"--remote-write.address", r.write,
			"--receive.capnproto-address", r.capnp,
			"--receive.hashrings-file", ringFile,
			"--receive.local-endpoint", r.grpc,
			"--receive.replication-factor", "1",
			// One external label for the hashring, the same on both:
			// with replication factor 1 a series is on one receiver, and
			// a label that told the receivers apart would keep a ruler's
			// recording (hashed to one) from matching its input (hashed
			// to the other) when the ruler's query does not deduplicate.
			"--label", `receive="fleet-bench"`,
			"--tsdb.retention", "1d",
			"--tsdb.enable-native-histograms",
			"--log.level", "warn"); err != nil {
			return nil, err
		}
		e.receiveHTTP = append(e.receiveHTTP, r.http)
	}
	e.receiveWrite = "http://" + rs[0].write + "/api/v1/receive"
	for i, r := range rs {
		if err := e.waitReady(ctx, fmt.Sprintf("receive-%d", i), "http://"+r.http+"/-/ready", 60*time.Second); err != nil {
			return nil, err
		}
	}
	return []string{rs[0].grpc, rs[1].grpc}, nil
}

// startQuery starts the querier over the receivers at their gRPC
// addresses.
func (e *engines) startQuery(ctx context.Context, bin binaries, next func() string, receivers []string) error {
	e.queryHTTP = next()
	queryGRPC := next()
	if err := e.start("query", bin.thanos, nil, "query",
		"--http-address", e.queryHTTP, "--grpc-address", queryGRPC,
		"--endpoint", receivers[0], "--endpoint", receivers[1],
		// The Prometheus replica's label: one series whichever
		// replica shipped it.
		"--query.replica-label", "replica",
		"--log.level", "warn"); err != nil {
		return err
	}
	return e.waitReady(ctx, "query", "http://"+e.queryHTTP+"/-/ready", 60*time.Second)
}

// startRule starts the ruler on rulesFile, evaluating every eval through
// the querier and writing its recordings to the store.
func (e *engines) startRule(ctx context.Context, bin binaries, next func() string, rulesFile string, eval time.Duration) error {
	e.ruleHTTP = next()
	ruleGRPC := next()
	rw := fmt.Sprintf("remote_write:\n  - url: %s\n    name: store\n    queue_config: {batch_send_deadline: %s}\n", e.receiveWrite, promDuration(min(eval/2, 5*time.Second)))
	if err := e.start("rule", bin.thanos, nil, "rule",
		"--data-dir", filepath.Join(e.dir, "rule"),
		"--rule-file", rulesFile,
		"--eval-interval", promDuration(eval),
		"--query", e.queryHTTP,
		"--remote-write.config", rw,
		"--http-address", e.ruleHTTP, "--grpc-address", ruleGRPC,
		"--label", `ruler="fleet-bench"`,
		"--log.level", "warn"); err != nil {
		return err
	}
	return e.waitReady(ctx, "rule", "http://"+e.ruleHTTP+"/-/ready", 60*time.Second)
}

// startCollector starts the OpenTelemetry Collector with the shipped
// configuration, writing to the store.
func (e *engines) startCollector(ctx context.Context, bin binaries, next func() string, otlpInterval time.Duration) error {
	grpc, httpAddr, telem := next(), next(), next()
	host, port, _ := net.SplitHostPort(telem)
	if err := e.start("otelcol", bin.otelcol, []string{
		"OTELCOL_GRPC_LISTEN=" + grpc, "OTELCOL_HTTP_LISTEN=" + httpAddr,
		"OTELCOL_REMOTE_WRITE_URL=" + e.receiveWrite,
		"OTELCOL_BATCH_TIMEOUT=" + promDuration(min(otlpInterval/2, 5*time.Second)),
		"OTELCOL_TELEMETRY_HOST=" + host, "OTELCOL_TELEMETRY_PORT=" + port,
	}, "--config", filepath.Join(repoRoot(), "deploy", "otelcol", "config.yaml")); err != nil {
		return err
	}
	e.otlpHTTP = "http://" + httpAddr
	e.otelTelem = telem
	return e.waitReady(ctx, "otelcol", "http://"+telem+"/metrics", 60*time.Second)
}

// startScraper starts Prometheus in agent mode over the fleet's targets.
func (e *engines) startScraper(ctx context.Context, bin binaries, targets []string, scrape time.Duration) error {
	shipped, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "prometheus", "agent.yml"))
	if err != nil {
		return err
	}
	cfg, err := agentConfig(shipped, targets, scrape, e.receiveWrite)
	if err != nil {
		return err
	}
	path := filepath.Join(e.dir, "agent.yml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	e.promWeb = ports[0]
	if err := e.start("prometheus-agent", bin.prometheus,
		nil, "--enable-feature=agent,native-histograms",
		"--config.file", path, "--storage.agent.path", filepath.Join(e.dir, "prometheus-agent"),
		"--web.listen-address", e.promWeb, "--log.level", "warn"); err != nil {
		return err
	}
	return e.waitReady(ctx, "prometheus-agent", "http://"+e.promWeb+"/-/ready", 60*time.Second)
}

// repoRoot is the repository the bench runs in: the directory holding
// go.mod above the working directory.
func repoRoot() string {
	dir, _ := os.Getwd()
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
	}
	return dir
}

// procStat is an engine's CPU time and resident memory.
type procStat struct {
	cpu time.Duration
	rss int64 // bytes
}

// readProcStat reads /proc/PID/stat (utime, stime) and /proc/PID/status
// (VmRSS).
func readProcStat(pid int) (procStat, error) {
	var st procStat
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return st, err
	}
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return st, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	stt, _ := strconv.ParseInt(fields[12], 10, 64)
	st.cpu = time.Duration(ut+stt) * 10 * time.Millisecond // USER_HZ 100
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return st, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			st.rss = kb << 10
		}
	}
	return st, nil
}

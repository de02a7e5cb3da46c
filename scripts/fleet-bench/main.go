// Command fleet-bench runs an emulated ecagent fleet through real engines
// and measures what the fleet costs and whether its alerts tell the truth.
//
// Each of N emulated agents renders the real metrics pipeline: a
// metrics.Registry (its Consumer, bus model, slave, DC, real-time and host
// collectors) fed with synthetic cycle samples that evolve like a bus
// (log-normal wake-up latency with rare long spikes, frames lost now and
// then, a slave lost every few minutes and found again, the WKC broken
// meanwhile, DC difference and controller error on half the lines), with
// its own site, line and host labels. Most are served on loopback by the
// real metrics endpoint and scraped by Prometheus in agent mode
// (deploy/prometheus/agent.yml) that remote-writes them to the store;
// every --push-every-th one pushes through the real OTLP exporter
// (agent/metrics/otlp) to the OpenTelemetry Collector (deploy/otelcol), which
// remote-writes them as native histograms. The store is two Thanos
// receivers on one hashring, read through Thanos query; Thanos rule
// evaluates deploy/prometheus/ecagent.rules.yml through query and writes
// its recordings back.
//
// Regressions are injected at 40 % of the run into --regress-hosts hosts
// (on lines of their own) and every host of --regress-lines lines: their
// wake-up latency grows fivefold. The regression rules compare an hour
// with the same hour a week earlier; the bench compresses that time scale
// (docs/deployment.md, "The fleet bench"): the hour becomes a sixth of the
// run, the week half of it, every for: a twenty-fourth, so the first part
// of the run is the hosts' "last week". At the end every query of the
// fleet dashboard (deploy/grafana/dashboards/ecagent-fleet-overview.json,
// all sites, lines and hosts) is timed against Thanos query.
//
// Usage (the engines from scripts/engines and Debian's prometheus):
//
//	go run ./scripts/fleet-bench --hosts 1000 --duration 12m
//
// The last line is
//
//	fleet: N hosts, S series/host, G KB gzip/scrape, ingest X samples/s, query p99 Y ms (panel P), regressions alerted A of B, false alerts F
//
// and --json writes every figure measured.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// options are the command line.
type options struct {
	hosts, hostsPerLine, linesPerSite, pushEvery int
	regressHosts, regressLines                   int
	duration, scrape, eval, queryRange           time.Duration
	rate                                         float64
	queryRepeats, workers                        int
	dir, jsonOut                                 string
	keep                                         bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("fleet-bench", flag.ContinueOnError)
	fs.IntVar(&o.hosts, "hosts", 100, "emulated agents")
	fs.DurationVar(&o.duration, "duration", 10*time.Minute, "length of the run (the regression time scale follows it)")
	fs.DurationVar(&o.scrape, "scrape-interval", 15*time.Second, "scrape and OTLP export interval")
	fs.DurationVar(&o.eval, "eval-interval", 0, "rule evaluation interval (0: the scrape interval)")
	fs.IntVar(&o.hostsPerLine, "hosts-per-line", 10, "hosts per line")
	fs.IntVar(&o.linesPerSite, "lines-per-site", 10, "lines per site")
	fs.IntVar(&o.pushEvery, "push-every", 4, "every n-th host pushes OTLP through the collector instead of being scraped (0: none)")
	fs.IntVar(&o.regressHosts, "regress-hosts", 3, "hosts whose jitter regresses, each on a line of its own")
	fs.IntVar(&o.regressLines, "regress-lines", 1, "lines whose hosts all regress")
	fs.Float64Var(&o.rate, "rate", 200, "cycle samples per second and host fed to the registry (a real 1 kHz agent feeds 1000)")
	fs.IntVar(&o.queryRepeats, "query-repeats", 5, "times each dashboard query is timed")
	fs.DurationVar(&o.queryRange, "query-range", 6*time.Hour, "time range of the timed dashboard queries (the fleet dashboard's default)")
	fs.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "goroutines feeding the hosts")
	fs.StringVar(&o.dir, "dir", "", "work directory for the engines' data and logs (default: a new temporary one)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory")
	fs.StringVar(&o.jsonOut, "json", "", "write every figure to this file as JSON")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.eval == 0 {
		o.eval = o.scrape
	}
	lines := (o.hosts + o.hostsPerLine - 1) / o.hostsPerLine
	switch {
	case o.hosts < 1 || o.hostsPerLine < 2 || o.linesPerSite < 1:
		return o, fmt.Errorf("--hosts %d, --hosts-per-line %d, --lines-per-site %d: want ≥ 1, ≥ 2, ≥ 1", o.hosts, o.hostsPerLine, o.linesPerSite)
	case o.regressHosts+o.regressLines > lines:
		return o, fmt.Errorf("--regress-hosts %d + --regress-lines %d: the fleet has %d lines, each regression needs one", o.regressHosts, o.regressLines, lines)
	case o.duration < 20*o.scrape:
		return o, fmt.Errorf("--duration %v: want at least 20 scrape intervals (%v)", o.duration, 20*o.scrape)
	}
	return o, nil
}

// report is every figure of a run.
type report struct {
	Hosts           int           `json:"hosts"`
	Scraped         int           `json:"scraped"`
	Pushed          int           `json:"pushed_otlp"`
	SeriesPerHost   int           `json:"series_per_host"`
	ScrapeBytes     int           `json:"scrape_bytes_text"`
	ScrapeGzipBytes int           `json:"scrape_bytes_text_gzip"`
	ScrapeProtoGzip int           `json:"scrape_bytes_protobuf_gzip"`
	ScrapeServe     time.Duration `json:"scrape_serve_ns"`
	HeapPerHost     int64         `json:"heap_bytes_per_host"`
	IngestPerSec    float64       `json:"ingest_samples_per_s"`
	RemoteWriteBps  float64       `json:"remote_write_bytes_per_s"`
	WALBytesPerSec  float64       `json:"store_wal_bytes_per_s"`
	SeriesInStore   float64       `json:"series_in_store"`
	OTLPSeries      float64       `json:"otlp_series_in_store"`
	QueryP99        time.Duration `json:"query_p99_ns"`
	QueryP99Panel   string        `json:"query_p99_panel"`
	QueryMax        time.Duration `json:"query_max_ns"`
	// PanelMax is each panel's slowest query, the slowest first: what a
	// larger fleet needs recorded first.
	PanelMax    []panelLatency `json:"query_panels"`
	Queries     int            `json:"queries"`
	QueryErrors []string       `json:"query_errors,omitempty"`
	RuleErrors  []string       `json:"rule_errors,omitempty"`
	Injected    []string       `json:"injected"`
	Alerted     []string       `json:"alerted"`
	FalseAlerts []string       `json:"false_alerts"`
	// LineHostAlerts are host alerts on hosts of a regressed line that
	// fired before their line's alert took them in: hosts that did
	// change, paged one by one rather than as their line.
	LineHostAlerts []string           `json:"line_host_alerts"`
	Engines        map[string]engCost `json:"engines"`
	BenchCPU       float64            `json:"bench_cpu_cores"`
	Timescale      map[string]string  `json:"timescale"`
}

// engCost is an engine's CPU (cores, averaged over the measured part) and
// resident memory at the end.
type engCost struct {
	Cores float64 `json:"cores"`
	RSS   int64   `json:"rss_bytes"`
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	r, err := run(ctx, o, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet-bench:", err)
		os.Exit(1)
	}
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(r, "", "  ")
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "fleet-bench:", err)
			os.Exit(1)
		}
	}
	printReport(os.Stdout, o, r)
}

func run(ctx context.Context, o options, log *slog.Logger) (*report, error) {
	bin, err := findBinaries()
	if err != nil {
		return nil, err
	}
	dir, remove, err := runDir(o)
	if err != nil {
		return nil, err
	}
	if remove {
		defer os.RemoveAll(dir)
	}
	ts := timescale{window: o.duration / 6, baseline: o.duration / 2, forDur: max(2*o.eval, o.duration/24)}
	rulesFile, err := writeRules(dir, ts)
	if err != nil {
		return nil, err
	}

	log.Info("starting engines", "dir", dir)
	eng, err := startEngines(ctx, dir, bin, rulesFile, o.eval, o.scrape)
	if err != nil {
		return nil, err
	}
	defer eng.stop()
	log.Info("engines up", "query", "http://"+eng.queryHTTP, "rule", "http://"+eng.ruleHTTP, "otlp", eng.otlpHTTP, "remote_write", eng.receiveWrite)

	fctx, cancelFleet := context.WithCancel(ctx)
	defer cancelFleet()
	fl, heapPerHost, err := buildFleet(fctx, o, eng, log)
	if err != nil {
		return nil, err
	}

	r := &report{Hosts: o.hosts, Engines: map[string]engCost{}, Timescale: map[string]string{
		"[1h]": promDuration(ts.window), "offset 1w": promDuration(ts.baseline), "for": promDuration(ts.forDur)}}
	r.HeapPerHost = heapPerHost
	scraped := fl.scraped()
	r.Scraped, r.Pushed = len(scraped), o.hosts-len(scraped)
	var targets []string
	for _, h := range scraped {
		targets = append(targets, h.addr)
	}
	go fl.run(fctx, o.workers)
	if len(targets) > 0 {
		if err := eng.startScraper(ctx, bin, targets, o.scrape); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	log.Info("fleet running", "hosts", o.hosts, "scraped", r.Scraped, "otlp", r.Pushed, "duration", o.duration,
		"window", ts.window, "baseline", ts.baseline, "for", ts.forDur)

	regress, injected := pickRegressions(fl, o)
	for k := range injected {
		r.Injected = append(r.Injected, k)
	}
	sort.Strings(r.Injected)
	w := watch{eng: eng, log: log, start: start, injectAt: start.Add(o.duration * 4 / 10), grace: ts.window,
		regress: regress, injected: injected, seen: map[string]time.Time{}}
	if err := w.run(ctx, o, r); err != nil {
		return nil, err
	}
	w.account(r)

	api := "http://" + eng.queryHTTP
	r.SeriesInStore, _, _ = scalar(api, `count({__name__=~"ecagent_.+"})`)
	r.OTLPSeries, _, _ = scalar(api, `count({__name__=~"ecagent_.+", instance=~".+/.+/.+"})`)

	if len(scraped) > 0 {
		if err := measureScrape(scraped, r); err != nil {
			return nil, err
		}
	}
	if err := timeDashboard(api, o, r); err != nil {
		return nil, err
	}
	cancelFleet()
	return r, nil
}

// buildFleet builds the fleet of o, pushing to eng's collector, and
// returns it with the heap its hosts took, per host.
func buildFleet(ctx context.Context, o options, eng *engines, log *slog.Logger) (*fleet, int64, error) {
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fl, err := newFleet(ctx, fleetOptions{hosts: o.hosts, hostsPerLine: o.hostsPerLine, linesPerSite: o.linesPerSite,
		pushEvery: o.pushEvery, rate: o.rate, window: 10 * time.Second, otlpEndpoint: eng.otlpHTTP,
		otlpInterval: o.scrape, seed: 1}, log)
	if err != nil {
		return nil, 0, err
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	return fl, int64(after.HeapInuse-before.HeapInuse) / int64(o.hosts), nil
}

// runDir returns the directory of the run's files: o.dir, made if need
// be, or a fresh temporary one, to remove after the run unless o.keep.
func runDir(o options) (dir string, remove bool, err error) {
	if o.dir != "" {
		return o.dir, false, os.MkdirAll(o.dir, 0o755)
	}
	dir, err = os.MkdirTemp("", "fleet-bench-")
	return dir, err == nil && !o.keep, err
}

// writeRules writes the shipped Prometheus rules, on the run's timescale,
// into dir and returns the file's path.
func writeRules(dir string, ts timescale) (string, error) {
	shipped, err := os.ReadFile(filepath.Join(repoRoot(), "deploy", "prometheus", "ecagent.rules.yml"))
	if err != nil {
		return "", err
	}
	rulesFile := filepath.Join(dir, "ecagent.rules.yml")
	return rulesFile, os.WriteFile(rulesFile, rulesFor(shipped, ts), 0o644)
}

// pickRegressions chooses the hosts whose jitter regresses and returns
// them with the alerts they must make: lone hosts on lines of their own,
// spread over the fleet, the first one a pushing host if there are any;
// then whole lines.
func pickRegressions(fl *fleet, o options) (regress []*host, injected map[string]bool) {
	injected = map[string]bool{}
	lines := map[int][]*host{}
	for _, h := range fl.hosts {
		lines[h.lineIndex] = append(lines[h.lineIndex], h)
	}
	var lineIdx []int
	for li := range lines {
		lineIdx = append(lineIdx, li)
	}
	sort.Ints(lineIdx)
	step := max(1, len(lineIdx)/max(1, o.regressHosts+o.regressLines))
	for k := range o.regressHosts {
		hs := lines[lineIdx[k*step]]
		pick := hs[0]
		if k == 0 {
			for _, h := range hs {
				if h.push {
					pick = h
					break
				}
			}
		}
		regress = append(regress, pick)
		injected[firing{"EcagentJitterP99Regressed", pick.site, pick.line, pick.name}.String()] = true
	}
	for k := range o.regressLines {
		hs := lines[lineIdx[(o.regressHosts+k)*step]]
		regress = append(regress, hs...)
		injected[firing{"EcagentLineJitterRegressed", hs[0].site, hs[0].line, ""}.String()] = true
	}
	return regress, injected
}

// watch is the measured part of a run: it injects the regressions, reads
// the ruler's alerts every evaluation and keeps the engines' figures from
// the injection on.
type watch struct {
	eng      *engines
	log      *slog.Logger
	start    time.Time
	injectAt time.Time
	grace    time.Duration // how long past the run an alert on its way may take
	regress  []*host
	injected map[string]bool
	seen     map[string]time.Time // alerts seen firing, when first

	// From the injection on: when, and the figures then.
	t0              time.Time
	ing0, rw0, wal0 float64
	cpu0            map[string]procStat
	self0           procStat
}

// run watches until the run's duration is over or ctx ends.
func (w *watch) run(ctx context.Context, o options, r *report) error {
	alertNames := []string{"EcagentJitterP99Regressed", "EcagentLineJitterRegressed"}
	w.cpu0 = map[string]procStat{}
	w.self0, _ = readProcStat(os.Getpid())
	tick := time.NewTicker(o.eval)
	defer tick.Stop()
	injectedDone := false
	end := w.start.Add(o.duration)
	// On a loaded host the ruler and the store lag: an alert on its way
	// at the end gets up to a window more (the regressions still on), and
	// the run ends as soon as every injected one has fired.
	grace := end.Add(w.grace)
	for now := time.Now(); now.Before(end) || (now.Before(grace) && !w.allFired()); now = time.Now() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
		now := time.Now()
		if !injectedDone && now.After(w.injectAt) {
			w.inject(now, r)
			injectedDone = true
		}
		fs, err := firingAlerts("http://"+w.eng.ruleHTTP, alertNames)
		if err != nil {
			w.log.Warn("reading the ruler's alerts", "err", err)
			continue
		}
		for _, f := range fs {
			if _, ok := w.seen[f.String()]; !ok {
				w.seen[f.String()] = now
				w.log.Info("alert firing", "alert", f.String(), "at", now.Sub(w.start).Round(time.Second), "injected", w.injected[f.String()])
			}
		}
	}
	return nil
}

// allFired reports whether every injected regression has alerted.
func (w *watch) allFired() bool {
	for k := range w.injected {
		if _, ok := w.seen[k]; !ok {
			return false
		}
	}
	return len(w.injected) > 0
}

// inject makes the chosen hosts regress, at now, and starts the measured
// part of the run: the fleet is warm, every engine has its series.
func (w *watch) inject(now time.Time, r *report) {
	for _, h := range w.regress {
		h.regressed.Store(true)
	}
	w.log.Info("regressions injected", "hosts", len(w.regress), "expected", r.Injected)
	w.t0 = now
	w.ing0, w.rw0, w.wal0 = w.eng.ingested(), w.eng.remoteWritten(), w.eng.walBytes()
	for _, p := range w.eng.procs {
		w.cpu0[p.name], _ = readProcStat(p.cmd.Process.Pid)
	}
	w.self0, _ = readProcStat(os.Getpid())
}

// account fills r with the rates and costs since the injection, the
// alerts that fired (expected or not) and the ruler's errors.
func (w *watch) account(r *report) {
	dt := time.Since(w.t0).Seconds()
	r.IngestPerSec = (w.eng.ingested() - w.ing0) / dt
	r.RemoteWriteBps = (w.eng.remoteWritten() - w.rw0) / dt
	r.WALBytesPerSec = (w.eng.walBytes() - w.wal0) / dt
	for _, p := range w.eng.procs {
		st, _ := readProcStat(p.cmd.Process.Pid)
		r.Engines[p.name] = engCost{Cores: (st.cpu - w.cpu0[p.name].cpu).Seconds() / dt, RSS: st.rss}
	}
	self, _ := readProcStat(os.Getpid())
	r.BenchCPU = (self.cpu - w.self0.cpu).Seconds() / dt
	changed := map[string]bool{} // the host alert of every regressed host
	for _, h := range w.regress {
		changed[firing{"EcagentJitterP99Regressed", h.site, h.line, h.name}.String()] = true
	}
	for k := range w.seen {
		switch {
		case w.injected[k]:
			r.Alerted = append(r.Alerted, k)
		case changed[k]:
			r.LineHostAlerts = append(r.LineHostAlerts, k)
		default:
			r.FalseAlerts = append(r.FalseAlerts, k)
		}
	}
	sort.Strings(r.Alerted)
	sort.Strings(r.FalseAlerts)
	sort.Strings(r.LineHostAlerts)
	r.RuleErrors, _ = ruleErrors("http://" + w.eng.ruleHTTP)
}

// printReport prints the figures, the summary line last.
func printReport(w io.Writer, o options, r *report) {
	fmt.Fprintf(w, "scrape of one host: %d series, %.1f KB text, %.1f KB gzip text, %.1f KB gzip protobuf, served in %.2f ms\n",
		r.SeriesPerHost, float64(r.ScrapeBytes)/1024, float64(r.ScrapeGzipBytes)/1024, float64(r.ScrapeProtoGzip)/1024, float64(r.ScrapeServe)/1e6)
	fmt.Fprintf(w, "heap per emulated host (registry, windows, exporter): %.0f KB\n", float64(r.HeapPerHost)/1024)
	fmt.Fprintf(w, "store: %.0f ecagent series (%.0f from OTLP), %.0f samples/s appended, WAL %.0f B/s; Prometheus agent remote-write %.0f B/s\n",
		r.SeriesInStore, r.OTLPSeries, r.IngestPerSec, r.WALBytesPerSec, r.RemoteWriteBps)
	names := make([]string, 0, len(r.Engines))
	for n := range r.Engines {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := r.Engines[n]
		fmt.Fprintf(w, "engine %-17s %.3f cores, %.0f MB RSS\n", n, c.Cores, float64(c.RSS)/(1<<20))
	}
	fmt.Fprintf(w, "fleet-bench itself (the emulated agents): %.3f cores\n", r.BenchCPU)
	fmt.Fprintf(w, "timescale: %v\n", r.Timescale)
	fmt.Fprintf(w, "dashboard: %d queries x %d, p99 %.0f ms, max %.0f ms (%s)\n", r.Queries, o.queryRepeats,
		float64(r.QueryP99)/1e6, float64(r.QueryMax)/1e6, r.QueryP99Panel)
	for _, p := range r.PanelMax[:min(5, len(r.PanelMax))] {
		fmt.Fprintf(w, "  slowest panel: %-40s %.0f ms\n", p.Panel, float64(p.Max)/1e6)
	}
	for _, e := range r.QueryErrors {
		fmt.Fprintln(w, "query error:", e)
	}
	for _, e := range r.RuleErrors {
		fmt.Fprintln(w, "rule error:", e)
	}
	fmt.Fprintf(w, "injected: %s\n", strings.Join(r.Injected, ", "))
	fmt.Fprintf(w, "alerted: %s\n", strings.Join(r.Alerted, ", "))
	fmt.Fprintf(w, "false alerts: %s\n", strings.Join(r.FalseAlerts, ", "))
	fmt.Fprintf(w, "hosts of a regressed line paged before their line: %s\n", strings.Join(r.LineHostAlerts, ", "))
	fmt.Fprintf(w, "fleet: %d hosts, %d series/host, %.1f KB gzip/scrape, ingest %.0f samples/s, query p99 %.0f ms (panel %s), regressions alerted %d of %d, false alerts %d\n",
		r.Hosts, r.SeriesPerHost, float64(r.ScrapeGzipBytes)/1024, r.IngestPerSec, float64(r.QueryP99)/1e6, r.QueryP99Panel,
		len(r.Alerted), len(r.Injected), len(r.FalseAlerts))
}

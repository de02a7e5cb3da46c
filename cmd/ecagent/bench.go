package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ecagent/ecagent/agent/bench"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/master/sim"
)

// defaultBenchDuration is how long bench runs without --cycles or --duration.
const defaultBenchDuration = 10 * time.Second

func benchCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "bench", "[--cycles N | --duration D] [--json FILE] [--compare-cyclictest] [flags]",
		"Run the real-time cycle exactly as 'ecagent run' would (same configuration flags;\n"+
			"with no bus.interface the simulated segment runs in another process) for N cycles\n"+
			"or a duration, and print the report: cycle time, jitter, wake-up latency, job time\n"+
			"and CPU load, frame round trip, lost frames, WKC errors, overruns, the real-time\n"+
			"settings the host granted, the jitter distribution and a wake-up latency histogram.\n"+
			"--json writes a cyclictest-compatible --json report (1 µs histogram of the wake-up\n"+
			"latency) with the full report under the extra key \"ecagent\". --compare-cyclictest\n"+
			"then runs cyclictest (Debian package rt-tests) with the same interval, priority,\n"+
			"core and loops, after the bench, and prints both side by side with their ratios.\n"+
			"Unless cycle.shm is set, the segment is /dev/shm/ecagent-bench-PID.shm, so a bench\n"+
			"never meets a running agent's segment.")
	config.RegisterFlags(fs)
	cycles := fs.Uint64("cycles", 0, "run this many cycles (instead of --duration)")
	duration := fs.Duration("duration", defaultBenchDuration, "run for this long: duration / cycle.period cycles")
	jsonFile := fs.String("json", "", "write the machine-readable report to `FILE` (cyclictest --json shape plus key \"ecagent\")")
	compare := fs.Bool("compare-cyclictest", false, "after the bench, run cyclictest with the same interval, priority, core and loops and compare")
	histUS := fs.Int("histogram-us", 1000, "range of the 1 µs wake-up latency histogram in µs (cyclictest -h); longer latencies count as overflow")
	telemetry := fs.Bool("telemetry", true, "do what a running agent does beside the cycle: feed the Prometheus registry and scrape /metrics (on a loopback port) every --scrape-interval")
	scrapeEvery := fs.Duration("scrape-interval", time.Second, "how often the bench scrapes its own /metrics when --telemetry is on")
	cyclictest := fs.String("cyclictest", "cyclictest", "the cyclictest `binary` for --compare-cyclictest")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(config.Sources{Flags: fs, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return usageError{err}
	}
	n, err := benchCycles(fs.Changed("cycles"), *cycles, fs.Changed("duration"), *duration, cfg.Cycle.Period)
	if err != nil {
		return usageError{err}
	}
	if *histUS < 1 {
		return usageError{fmt.Errorf("bench: --histogram-us %d: want at least 1", *histUS)}
	}
	if *telemetry && *scrapeEvery <= 0 {
		return usageError{fmt.Errorf("bench: --scrape-interval %v: want more than 0", *scrapeEvery)}
	}
	if cfg.Cycle.SHM == config.DefaultSHM {
		cfg.Cycle.SHM = fmt.Sprintf("/dev/shm/ecagent-bench-%d.shm", os.Getpid())
	}
	if !fs.Changed("log.level") && cfg.Log.Level == "info" {
		// The cycle process's bring-up chatter would cut through the
		// progress bar; warnings (refused RT settings) still show.
		cfg.Log.Level = "warn"
	}
	ct := bench.Cyclictest{Binary: *cyclictest, Interval: cfg.Cycle.Period, Priority: cfg.Cycle.Priority,
		Core: cfg.Cycle.Core, Loops: n, HistogramMicros: *histUS}
	if *compare {
		// Before spending the bench's time: cyclictest must be there.
		if err := ct.Check(); err != nil {
			var missing *bench.MissingCyclictestError
			if errors.As(err, &missing) {
				return err
			}
			return usageError{err}
		}
	}

	log := newLogger(e.stderr, cfg.Log.SlogLevel(), cfg.Log.Format)
	version, _, _ := buildVersion()
	rep, runErr := bench.Run(ctx, cfg, bench.Options{
		Cycles: n, HistogramMicros: *histUS,
		Progress: e.stderr, Terminal: bench.IsTerminal(e.stderr),
		Telemetry: *telemetry, ScrapeInterval: *scrapeEvery,
		Cmdline: "ecagent bench " + strings.Join(args, " "), Version: "ecagent " + version,
	}, log)
	if rep == nil {
		return fmt.Errorf("bench: %w", runErr)
	}
	if err := rep.WriteText(e.stdout); err != nil {
		return err
	}
	if rep.RingDrops > 0 {
		fmt.Fprintf(e.stderr, "ecagent bench: warning: %d samples were dropped from the full sample ring; the figures cover the %d received\n",
			rep.RingDrops, rep.Cycles)
	}
	if *compare && runErr == nil {
		fmt.Fprintf(e.stderr, "ecagent bench: running cyclictest for %d loops of %v...\n", n, cfg.Cycle.Period)
		ctRep, err := ct.Run(ctx)
		if err == nil {
			rep.Comparison, err = bench.Compare(rep, ctRep)
		}
		if err == nil {
			err = rep.Comparison.WriteText(e.stdout)
		}
		runErr = err
	}
	if *jsonFile != "" {
		data, err := rep.JSON(bench.HostSysinfo())
		if err == nil {
			err = os.WriteFile(*jsonFile, data, 0o644)
		}
		if err != nil {
			return errors.Join(runErr, fmt.Errorf("bench: --json %s: %w", *jsonFile, err))
		}
	}
	return runErr
}

// benchCycles returns the number of cycles to run from --cycles or
// --duration (not both), rounding the duration up to whole periods.
func benchCycles(cyclesSet bool, cycles uint64, durationSet bool, duration, period time.Duration) (uint64, error) {
	if cyclesSet && durationSet {
		return 0, errors.New("bench: --cycles and --duration exclude each other")
	}
	if !cyclesSet {
		if duration <= 0 {
			return 0, fmt.Errorf("bench: --duration %v: want more than 0", duration)
		}
		cycles = uint64((duration + period - 1) / period)
	}
	if cycles < 2 {
		return 0, fmt.Errorf("bench: %d cycles: want at least 2 (a period needs two wake-ups)", cycles)
	}
	return cycles, nil
}

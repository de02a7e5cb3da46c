package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/bench"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/sim"
)

// defaultBenchDuration is how long bench runs without --cycles or --duration.
const defaultBenchDuration = 10 * time.Second

func benchCommand(ctx context.Context, e *env, args []string) error {
	fs, f := newBenchFlags(e)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(ctx, config.Sources{Flags: fs, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return err
	}
	n, err := benchCycles(fs.Changed("cycles"), *f.cycles, fs.Changed("duration"), *f.duration, time.Duration(cfg.Cycle.Period))
	if err != nil {
		return usageError{err}
	}
	ct, blockCycles, err := benchCyclictest(f, cfg, n)
	if err != nil {
		return err
	}
	if cfg.Cycle.SHM == contract.DefaultSHM {
		cfg.Cycle.SHM = fmt.Sprintf("/dev/shm/ecagent-bench-%d.shm", os.Getpid())
	}
	if !fs.Changed("log.level") && cfg.Log.Level == "info" {
		// The cycle process's bring-up chatter would cut through the
		// progress bar; warnings (refused RT settings) still show.
		cfg.Log.Level = "warn"
	}

	log := newLogger(e.stderr, cfg.Log.SlogLevel(), cfg.Log.Format)
	prog, err := agent.FindCycleProgram(cfg, log)
	if err != nil {
		return err
	}
	version, _, _ := buildVersion()
	opts := bench.Options{
		Program: prog, Cycles: n, HistogramMicros: *f.histUS,
		Progress: e.stderr, Terminal: bench.IsTerminal(e.stderr),
		Telemetry: *f.telemetry, ScrapeInterval: *f.scrapeEvery,
		Cmdline: "ecagent bench " + strings.Join(args, " "), Version: "ecagent " + version,
	}
	var x *explainer
	if *f.explain {
		if x, err = startExplain(ctx, cfg, log, &opts); err != nil {
			return err
		}
	}
	var rep *bench.Report
	var runErr error
	if *f.compare {
		opts.Cycles = blockCycles
		rep, runErr = bench.RunInterleaved(ctx, cfg, opts, ct, *f.blocks, log)
	} else {
		rep, runErr = bench.Run(ctx, cfg, opts, log)
	}
	if rep == nil {
		if x != nil {
			_ = x.finish(io.Discard, 0)
		}
		return fmt.Errorf("bench: %w", runErr)
	}
	err = writeBenchReport(e, rep, *f.jsonFile)
	if x != nil {
		err = errors.Join(err, x.finish(e.stdout, time.Duration(int64(cfg.Cycle.Period)*int64(cfg.Forensics.Threshold)/100)))
	}
	return errors.Join(runErr, err)
}

// benchCyclictest checks the bench's own flags and, with
// --compare-cyclictest, that cyclictest is there before the bench spends
// its time: the reference it runs, and the cycles of each block (n
// without a comparison).
func benchCyclictest(f *benchFlags, cfg config.Config, n uint64) (bench.Cyclictest, uint64, error) {
	if *f.histUS < 1 {
		return bench.Cyclictest{}, 0, usageError{fmt.Errorf("bench: --histogram-us %d: want at least 1", *f.histUS)}
	}
	if *f.telemetry && *f.scrapeEvery <= 0 {
		return bench.Cyclictest{}, 0, usageError{fmt.Errorf("bench: --scrape-interval %v: want more than 0", *f.scrapeEvery)}
	}
	ct := bench.Cyclictest{Binary: *f.cyclictest, Interval: time.Duration(cfg.Cycle.Period), Priority: cfg.Cycle.Priority,
		Core: cfg.Cycle.Core, Loops: n, HistogramMicros: *f.histUS}
	if !*f.compare {
		return ct, n, nil
	}
	blockCycles, err := benchBlockCycles(n, *f.blocks)
	if err != nil {
		return ct, 0, usageError{err}
	}
	ct.Loops = blockCycles
	if err := ct.Check(); err != nil {
		var missing *bench.MissingCyclictestError
		if errors.As(err, &missing) {
			return ct, 0, err
		}
		return ct, 0, usageError{err}
	}
	return ct, blockCycles, nil
}

// writeBenchReport prints the report, and writes it to jsonFile as JSON
// too unless that is empty.
func writeBenchReport(e *env, rep *bench.Report, jsonFile string) error {
	if err := rep.WriteText(e.stdout); err != nil {
		return err
	}
	if rep.RingDrops > 0 {
		fmt.Fprintf(e.stderr, "ecagent bench: warning: %d samples were dropped from the full sample ring; the figures cover the %d received\n",
			rep.RingDrops, rep.Cycles)
	}
	if rep.Comparison != nil {
		if err := rep.Comparison.WriteText(e.stdout); err != nil {
			return err
		}
	}
	if jsonFile != "" {
		data, err := rep.JSON(bench.HostSysinfo())
		if err == nil {
			err = os.WriteFile(jsonFile, data, 0o644)
		}
		if err != nil {
			return fmt.Errorf("bench: --json %s: %w", jsonFile, err)
		}
	}
	return nil
}

// benchFlags are the flags of ecagent bench beside the configuration keys.
type benchFlags struct {
	cycles                *uint64
	duration, scrapeEvery *time.Duration
	jsonFile, cyclictest  *string
	compare, telemetry    *bool
	explain               *bool
	blocks, histUS        *int
}

// newBenchFlags declares the flags of ecagent bench and its help.
func newBenchFlags(e *env) (*pflag.FlagSet, *benchFlags) {
	fs := newFlagSet(e, "bench", help{
		usage: "[--cycles N | --duration D] [--json FILE] [--compare-cyclictest] [--KEY V]...",
		about: "Run the real-time cycle exactly as 'ecagent run' would, for N cycles or a duration, " +
			"and report cycle time, jitter, wake-up latency, job time, CPU load, frame round trip, " +
			"lost frames, WKC errors and overruns, with the jitter distribution and a latency histogram.",
		groups: []flagGroup{
			{"Flags", []string{"cycles", "duration", "json", "explain", "compare-cyclictest", "telemetry"}},
			{"Configuration keys (as for run)", []string{config.FlagConfigFile, "bus.interface",
				"cycle.period", "cycle.core", "cycle.priority"}},
		},
		notes: "Every bus.*, cycle.* and log.* key, site, line, host and metrics.window is a flag too " +
			"('ecagent config schema'); so are --cyclictest, --histogram-us, --scrape-interval (see " +
			"docs/performance.md). " +
			"Unless cycle.shm is set, the segment is /dev/shm/ecagent-bench-PID.shm. " +
			"--compare-cyclictest interleaves blocks of both sides (ABBA) over the same host noise.",
		examples: []string{
			"ecagent bench --duration 60s --cycle.period 250us --cycle.core 3",
			"ecagent bench --bus.interface eth1 --cycles 100000 --json bench.json",
			"ecagent bench --compare-cyclictest --duration 5m",
		},
	})
	// What bench.Run reads: the cycle and its segment, the log, and the
	// telemetry's labels and window.
	config.RegisterFlagsFor(fs, "bus", "cycle", "log", "site", "line", "host", "metrics.window")
	return fs, &benchFlags{
		cycles:      fs.Uint64("cycles", 0, "run this many cycles (instead of --duration)"),
		duration:    fs.Duration("duration", defaultBenchDuration, "run for this long: duration / cycle.period cycles"),
		jsonFile:    fs.String("json", "", "write the report to `FILE` as cyclictest --json does, the full report under key \"ecagent\""),
		explain:     fs.Bool("explain", false, "print what delayed each late cycle (tracefs on cycle.core)"),
		compare:     fs.Bool("compare-cyclictest", false, "compare with cyclictest (rt-tests), run in blocks interleaved with the cycle's, same settings"),
		blocks:      fs.Int("blocks", bench.DefaultBlocks, "blocks of --compare-cyclictest, even, half of each side"),
		histUS:      fs.Int("histogram-us", 1000, "range in µs of the latency histogram (cyclictest -h)"),
		telemetry:   fs.Bool("telemetry", true, "feed the Prometheus registry and scrape /metrics beside the cycle, as an agent does"),
		scrapeEvery: fs.Duration("scrape-interval", time.Second, "how often --telemetry scrapes /metrics"),
		cyclictest:  fs.String("cyclictest", "cyclictest", "the cyclictest `binary` for --compare-cyclictest"),
	}
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

// benchBlockCycles returns the cycles of each block when each side's n
// cycles are split into blocks/2 blocks (rounded up, so no side runs
// fewer than asked).
func benchBlockCycles(n uint64, blocks int) (uint64, error) {
	if blocks < 2 || blocks%2 != 0 {
		return 0, fmt.Errorf("bench: --blocks %d: want an even number, at least 2", blocks)
	}
	per := (n + uint64(blocks/2) - 1) / uint64(blocks/2)
	if per < 2 {
		return 0, fmt.Errorf("bench: %d cycles in %d blocks per side is %d a block: want at least 2", n, blocks/2, per)
	}
	return per, nil
}

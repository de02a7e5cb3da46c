package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/rtcheck"
	"github.com/ecagent/ecagent/master/sim"
)

// errChecksFailed makes rtcheck exit 1 without printing more than its table.
var errChecksFailed = errors.New("rtcheck: host not tuned for real time (see the checks above)")

func rtcheckCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "rtcheck", "[--json] [--strict] [config flags]",
		"Check this host's real-time tuning for the cycle: PREEMPT_RT kernel, isolcpus/\n"+
			"nohz_full/rcu_nocbs covering cycle.core, cpufreq governor, C-states, IRQ\n"+
			"affinity, clocksource, RT throttling, SCHED_FIFO and mlock permission, DMA\n"+
			"latency, swap, and the EtherCAT NIC (bus.interface): link, coalescing,\n"+
			"offloads, rings, NetworkManager. Each check says pass, warn, fail or skip,\n"+
			"what it found and the command that fixes it. Reads /proc and /sys only and\n"+
			"changes nothing. 'ecagent run' exports the same checks continuously as\n"+
			"ecagent_rt_check. Exit code 1 when a check fails (with --strict also on\n"+
			"warnings), 0 otherwise. Run it as the user the agent runs as.")
	config.RegisterFlags(fs)
	asJSON := fs.Bool("json", false, "print the results as JSON")
	strict := fs.Bool("strict", false, "exit 1 on warnings too")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(config.Sources{Flags: fs, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return usageError{err}
	}
	opts := rtcheck.DefaultOptions()
	opts.CycleCore, opts.Interface, opts.Priority = cfg.Cycle.Core, cfg.Bus.Interface, cfg.Cycle.Priority
	results := rtcheck.Run(ctx, opts)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else if err := rtcheck.Report(e.stdout, results); err != nil {
		return err
	}
	switch w := rtcheck.Worst(results); {
	case w == rtcheck.Fail, w == rtcheck.Warn && *strict:
		return errChecksFailed
	}
	return nil
}

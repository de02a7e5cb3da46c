package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/rtcheck"
	"github.com/ecagent/ecagent/sim"
)

// errChecksFailed makes rtcheck exit 1 without printing more than its table.
var errChecksFailed = errors.New("rtcheck: host not tuned for real time (see the checks above)")

func rtcheckCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "rtcheck", help{
		usage: "[--json] [--strict] [--config FILE] [--cycle.core N] [--bus.interface IF]",
		about: "Check this host's real-time tuning for the cycle (PREEMPT_RT, CPU isolation of " +
			"cycle.core, cpufreq, C-states, IRQ affinity, clocksource, RT throttling, SCHED_FIFO and " +
			"mlock permission, swap, and the EtherCAT NIC) and say for each check what it found and " +
			"the command that fixes it.",
		groups: []flagGroup{
			{"Flags", []string{"json", "strict"}},
			{"Configuration keys the checks read", []string{config.FlagConfigFile, "cycle.core",
				"cycle.priority", "bus.interface"}},
		},
		notes: "It reads /proc and /sys and changes nothing; run it as the user the agent runs as. " +
			"Exit code 1 when a check fails (with --strict also on a warning), 0 otherwise. " +
			"'ecagent run' exports the same checks as ecagent_rt_check.",
		examples: []string{
			"ecagent rtcheck --cycle.core 3 --bus.interface eth1",
			"ecagent rtcheck --config /etc/ecagent/ecagent.yaml --json --strict",
		},
	})
	// Only the keys the checks read; the file and the environment may set
	// any key (and are validated whole).
	config.RegisterFlagsFor(fs, "cycle.core", "cycle.priority", "bus.interface")
	asJSON := fs.Bool("json", false, "print the results as JSON")
	strict := fs.Bool("strict", false, "exit 1 on warnings too")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(ctx, config.Sources{Flags: fs, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return err
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

package main

import (
	"context"
	"fmt"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/master/sim"
)

func runCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "run", "[flags]",
		"Bring the EtherCAT segment to OP and run the cycle, printing a status line every\n"+
			"status.interval. With no bus.interface it runs the built-in simulated segment\n"+
			"(bus.devices), so it needs no hardware and no configuration. Settings come from\n"+
			"built-in defaults, then --config FILE (YAML), then ECAGENT_* variables, then flags.")
	config.RegisterFlags(fs)
	printConfig := fs.Bool("print-config", false, "print the effective configuration as YAML and exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(config.Sources{Flags: fs, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return usageError{err}
	}
	if *printConfig {
		y, err := cfg.YAML()
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(y)
		return err
	}
	log := newLogger(e.stderr, cfg.Log.SlogLevel(), cfg.Log.Format)
	v, rev, _ := buildVersion()
	if err := agent.Run(ctx, cfg, log, e.stdout, agent.Build{Version: v, Revision: rev}); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

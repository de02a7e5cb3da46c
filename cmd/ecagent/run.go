package main

import (
	"context"
	"fmt"
	"os"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/master/sim"
)

// runHelp shows the keys most often set; every key is a flag.
func runHelp() help {
	return help{
		usage: "[--config FILE] [--KEY VALUE]...",
		about: "Bring the EtherCAT segment to OP and run the cycle, exporting metrics, MQTT and OTLP and " +
			"printing a status line every status.interval; with no bus.interface it runs the built-in " +
			"simulated segment, so it needs no hardware.",
		groups: []flagGroup{
			{"Flags", []string{config.FlagConfigFile, "print-config"}},
			{"Common configuration keys", []string{"bus.interface", "bus.devices", "bus.expectedslaves",
				"cycle.period", "cycle.core", "cycle.priority", "metrics.listen", "mqtt.broker",
				"otlp.endpoint", "log.level", "site"}},
		},
		notes: "Every configuration key is a flag --KEY VALUE, a key in the YAML file, and an environment " +
			"variable: ECAGENT_ and the key in capitals with _ for . (ECAGENT_CYCLE_PERIOD=250us). Flags " +
			"override the environment, which overrides the file, which overrides the defaults. " +
			"'ecagent config schema' lists every key with its default and allowed values; so does " +
			"docs/configuration.md.",
		examples: []string{
			"ecagent run                                # the simulated segment, no hardware",
			"ecagent run --bus.interface eth1 --cycle.period 250us --cycle.core 3",
			"ecagent run --config /etc/ecagent/ecagent.yaml --print-config",
		},
	}
}

func runCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "run", runHelp())
	config.RegisterFlags(fs)
	printConfig := fs.Bool("print-config", false, "print the effective configuration as YAML and exit")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(ctx, config.Sources{Flags: fs, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return err
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
	// A clean stop: on SIGINT (Ctrl-C) the run was interrupted, which
	// exits 130 as documented (and as bench does); on SIGTERM it is how a
	// service manager stops the agent, which must exit 0: the systemd unit
	// (deploy/systemd/ecagent.service) sets no SuccessExitStatus, so 143
	// would mark every `systemctl stop` a failure.
	if interruptedBy(ctx, os.Interrupt) {
		return errInterrupted
	}
	return nil
}

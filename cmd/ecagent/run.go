package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/sim"
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
				"cycle.period", "cycle.core", "cycle.priority", "cycle.shm", "metrics.listen", "mqtt.broker"}},
		},
		notes: "Every configuration key is a flag --KEY VALUE, a key in the YAML file, and an environment " +
			"variable: ECAGENT_ and the key in capitals with _ for . (ECAGENT_CYCLE_PERIOD=250us). Flags " +
			"override the environment, which overrides the file. 'ecagent config schema' lists every " +
			"key (docs/configuration.md).",
		examples: []string{
			"ecagent run                     # the simulated segment, no hardware",
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
	logENINotes(cfg, log)
	v, rev, _ := buildVersion()
	ran := make(chan struct{})
	defer close(ran)
	go watchStop(ctx, ran, stopBound(cfg), log, e.stderr, os.Exit)
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

// stopBound is how long the agent may take to stop once asked: the sum of
// its bounded steps (the cycle taken to INIT and stopped, each within
// bus.statetimeout and 2 s; the MQTT publisher's goodbye in 5 s, its grace
// for the buffer, the last acknowledgement and the cut connection; the
// embedded broker's clients ended in 2 s; the last OTLP export in 5 s),
// with a second of room. With the default statetimeout it is 27 s, below
// the systemd unit's TimeoutStopSec of 30 s, so that the stacks reach the
// journal before systemd kills.
func stopBound(cfg config.Config) time.Duration {
	return 2*time.Duration(cfg.Bus.StateTimeout) + 17*time.Second
}

// watchStop waits for ctx to end (a stop signal) and then for ran to be
// closed (the agent stopped). A stop that takes longer than bound is a
// hang, not a slow step: it logs why, writes every goroutine's stack to w
// for the report, and exits 1, so that a service manager or a test waiting
// for the process is not held until its own kill (systemd's
// TimeoutStopSec), with nothing said.
func watchStop(ctx context.Context, ran <-chan struct{}, bound time.Duration, log *slog.Logger, w io.Writer, exit func(int)) {
	select {
	case <-ran:
		return
	case <-ctx.Done():
	}
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-ran:
	case <-t.C:
		log.Error("the agent did not stop in time; its goroutines follow, then it exits", "bound", bound)
		_ = pprof.Lookup("goroutine").WriteTo(w, 2)
		exit(exitFailure)
	}
}

package main

import (
	"context"
	"fmt"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/master/sim"
)

// cycleCommand is the hidden `ecagent cycle`: the real-time cycle process
// that `ecagent run` starts and supervises. It is not meant to be run by
// hand, but it can be, against a segment file an agent created.
func cycleCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "cycle", help{
		usage: "--config FILE [--link-fd N] [--cycles N] [--KEY VALUE]...",
		about: "The real-time cycle process that 'ecagent run' and 'ecagent bench' start: it attaches " +
			"to the shared-memory segment cycle.shm the agent created, brings the bus to OP and runs " +
			"the cycle until SIGTERM, allocating nothing after bring-up.",
		groups: []flagGroup{
			{"Flags", []string{config.FlagConfigFile, "link-fd", "cycles"}},
			{"Common configuration keys", []string{"bus.interface", "cycle.period", "cycle.shm"}},
		},
		notes: "Of the configuration it reads the bus.*, cycle.* and log.* keys (each also a flag) and " +
			"drives from the file; 'ecagent config schema' lists them.",
		examples: []string{
			"ecagent cycle --config /dev/shm/ecagent.shm.yaml   # the file 'ecagent run' writes",
			"ecagent cycle --cycle.shm /dev/shm/a.shm --bus.interface eth1 --cycles 10000",
		},
	})
	config.RegisterFlagsFor(fs, "bus", "cycle", "log")
	linkFD := fs.Int("link-fd", -1, "inherited file descriptor of a socket-pair link to a simulated segment; -1 opens bus.interface")
	cycles := fs.Uint64("cycles", 0, "stop after this many cycles; 0 runs until SIGTERM")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := config.Load(config.Sources{Flags: fs, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return usageError{err}
	}
	log := newLogger(e.stderr, cfg.Log.SlogLevel(), cfg.Log.Format).With("process", "cycle")
	quietCycleRuntime(log)
	rep, err := agent.RunCycleProcess(ctx, cfg, agent.CycleOptions{LinkFD: *linkFD, Cycles: *cycles}, log)
	if err != nil {
		return fmt.Errorf("cycle: %w", err)
	}
	log.Info("cycle process stopped", "cycles", rep.Cycles, "mallocs_in_cycle", rep.Mallocs, "gc_in_cycle", rep.NumGC)
	return nil
}

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
	fs := newFlagSet(e, "cycle", "--config FILE [--link-fd N] [--cycles N]",
		"The real-time cycle process, started by 'ecagent run' (and 'ecagent bench'): it\n"+
			"attaches to the shared-memory segment cycle.shm, brings the bus to OP and runs\n"+
			"the cycle until SIGTERM, allocating nothing after bring-up.")
	config.RegisterFlags(fs)
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
	rep, err := agent.RunCycleProcess(ctx, cfg, agent.CycleOptions{LinkFD: *linkFD, Cycles: *cycles}, log)
	if err != nil {
		return fmt.Errorf("cycle: %w", err)
	}
	log.Info("cycle process stopped", "cycles", rep.Cycles, "mallocs_in_cycle", rep.Mallocs, "gc_in_cycle", rep.NumGC)
	return nil
}

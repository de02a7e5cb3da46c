package process

import (
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/rt"
)

// cycleMemoryLimit bounds the Go heap of the cycle process. The engine
// switches the collector off for cyclic operation; without a limit the
// heap goal is then unbounded, and a goal past 1 GiB makes the runtime
// mark its heap metadata (the 32 MiB heap index) for huge pages. With the
// limit the goal stays at it, and should the heap ever reach it the
// collector runs instead of the heap growing without end. The cycle
// process's anonymous memory (heap, stacks, runtime metadata) is 3.5 MiB
// after bring-up on the simulated segment (RssAnon; docs/performance-log.md,
// "2026-12-01: The cycle process's runtime settings"), so 64 MiB leaves
// room for large segments without the collector ever running.
const cycleMemoryLimit = 64 << 20

// quietRuntime sets up the Go runtime of the cycle process before its
// heap grows and its cycle thread starts: no transparent huge pages, a
// bounded heap (the cycle's sleep keeping its P is the engine's
// cycle.Config.SleepKeepsP). A GOMEMLIMIT in the environment is left in
// force.
func quietRuntime(log *slog.Logger) {
	if err := rt.DisableTHP(); err != nil {
		log.Warn("transparent huge pages stay enabled for the cycle process", "err", err)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(cycleMemoryLimit)
	}
}

// logCapabilities says in one line, at start, which capabilities the
// process holds (effective) against those its configuration needs
// (contract.Config.Capabilities): missing ones are the settings refused
// later, each with a line of its own; it warns when the process holds one
// it does not need (run by hand as root: `ecagent run` passes only what
// is needed).
func logCapabilities(cfg Config, log *slog.Logger) {
	pc, err := contract.ReadProcessCaps(0)
	if err != nil {
		log.Warn("cannot read the process's capabilities", "err", err)
		return
	}
	need := cfg.Capabilities()
	attrs := []any{"effective", pc.Effective, "needed", need, "missing", need &^ pc.Effective,
		"bounding", pc.Bounding, "no_new_privs", pc.NoNewPrivs}
	if beyond := pc.Effective &^ need; beyond != 0 {
		log.Warn("capabilities beyond what the configuration needs: start the cycle process with ecagent run, "+
			"which passes only those, or drop them", append(attrs, "beyond_needed", beyond)...)
		return
	}
	log.Info("capabilities", attrs...)
}

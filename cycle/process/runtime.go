package process

import (
	"log/slog"
	"os"
	"runtime/debug"

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

package contract

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Cycle configures the real-time cycle and the host resources it asks for.
type Cycle struct {
	// Period is the cycle period.
	Period Duration `json:"period" koanf:"period" help:"cycle period, 50us..1s"`
	// Core is the CPU the cycle thread is pinned to; -1 leaves it
	// unpinned. The built-in simulated segment keeps off it.
	Core int `json:"core" koanf:"core" help:"CPU to pin the cycle thread to (the built-in simulated segment keeps off it); -1 leaves it unpinned"`
	// Priority is the SCHED_FIFO priority (1..99); 0 keeps the normal
	// scheduler.
	Priority int `json:"priority" koanf:"priority" help:"SCHED_FIFO priority of the cycle thread, 1..99; 0 keeps the normal scheduler"`
	// BusyWait is the tail before each deadline that the cycle thread
	// spins instead of sleeping; 0 disables spinning.
	BusyWait Duration `json:"busywait" koanf:"busywait" help:"spin this long before each deadline instead of sleeping (lower wake-up latency, burns the core); less than cycle.period; 0 disables"`
	// RecvSpin is how long the cycle thread reads its frames' answers
	// without waiting before it blocks for them; at most half the period
	// is used.
	RecvSpin Duration `json:"recvspin" koanf:"recvspin" help:"read the frames' answers without waiting this long before blocking (no context switch when they come back within it; burns the core meanwhile); at most half of cycle.period is used; 0..1s, 0 disables"`
	// Exchange is how a cycle meets its frames: ExchangePipelined or
	// ExchangeWait.
	Exchange string `json:"exchange" koanf:"exchange" help:"pipelined: collect the answers to the previous cycle's frames, send without waiting (one context switch a cycle; inputs one period old, as IgH and TwinCAT); wait: send, then wait for the answers"`
	// LockMemory asks the cycle process to lock its memory so the cycle
	// never takes a page fault (cycle/rt Options.LockMemory).
	LockMemory bool `json:"lockmemory" koanf:"lockmemory" help:"lock the cycle process's memory so the cycle never waits for a page fault: the pages touched at start, and those touched later when CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK allows it"`
	// SHM is the shared-memory file through which the cycle process and
	// the agent process exchange samples, the process image, commands and
	// events. A restarted agent finds a running cycle there.
	SHM string `json:"shm" koanf:"shm" help:"shared-memory file between the cycle process and the agent (an absolute path, normally under /dev/shm); one per agent instance"`
	// Program is the cycle program the agent starts (cmd/ecagent-cycle):
	// a path, or a name looked up in $PATH; "" is ecagent-cycle in the
	// directory of the running ecagent, else in $PATH, else the ecagent
	// executable itself in its hidden cycle mode. Only the agent reads it.
	Program string `json:"-" koanf:"program" help:"the cycle program the agent starts: a path, or a name looked up in $PATH; empty: ecagent-cycle in the directory of the ecagent executable, else in $PATH, else the ecagent executable itself (its hidden cycle mode, said at warn)"`
}

// The values of cycle.exchange (Cycle.Exchange).
const (
	// ExchangePipelined: each cycle collects the answers to the frames the
	// previous one sent and sends its own without waiting.
	ExchangePipelined = "pipelined"
	// ExchangeWait: each cycle sends its frames and waits for the answers.
	ExchangeWait = "wait"
)

// Bounds and defaults of the cycle.* keys.
const (
	MinPeriod   = 50 * time.Microsecond // shortest cycle.period
	MaxPeriod   = time.Second           // longest cycle.period
	MaxPriority = 99                    // highest cycle.priority (SCHED_FIFO)
	MaxRecvSpin = time.Second           // longest cycle.recvspin
)

// DefaultSHM is the default cycle.shm: tmpfs, so the segment never touches
// a disk, in a directory of the agent's own (the systemd unit's
// RuntimeDirectory, the Helm chart's volume), where no other user can make
// names: the maintenance commands find the agent there without being told.
// The agent creates the directory when it is missing (DefaultSHMDir).
const DefaultSHM = "/run/ecagent/ecagent.shm"

// DefaultSHMDir is the directory of DefaultSHM, which the agent creates
// (mode 0750) when it is missing.
const DefaultSHMDir = "/run/ecagent"

// DefaultRecvSpin is the default cycle.recvspin: long enough for the
// answers of a small segment (a 1 ms cycle over a veth or socket pair:
// 2.55 → 1.39 context switches per cycle at the same CPU,
// docs/performance.md).
const DefaultRecvSpin = 100 * time.Microsecond

// defaultCycle is the cycle.* keys' defaults.
func defaultCycle() Cycle {
	return Cycle{
		Period:     Duration(time.Millisecond),
		Core:       -1,
		Priority:   80,
		RecvSpin:   Duration(DefaultRecvSpin),
		Exchange:   ExchangePipelined,
		LockMemory: true,
		SHM:        DefaultSHM,
	}
}

func (c Config) cycleProblems(p *problems) {
	cy := c.Cycle
	p.duration("cycle.period", cy.Period, MinPeriod, MaxPeriod)
	if cy.Core < -1 {
		p.add("cycle.core", cy.Core, "must be -1 (no pinning) or a CPU number")
	}
	if n := cy.Priority; n < 0 || n > MaxPriority {
		p.add("cycle.priority", n, fmt.Sprintf("must be between 1 and %d (SCHED_FIFO), or 0 to keep the normal scheduler", MaxPriority))
	}
	if bw := cy.BusyWait; bw < 0 || bw >= cy.Period {
		p.add("cycle.busywait", bw, fmt.Sprintf("must be at least 0 and less than cycle.period (%s)", cy.Period))
	}
	if rs := cy.RecvSpin; rs < 0 || time.Duration(rs) > MaxRecvSpin {
		p.add("cycle.recvspin", rs, fmt.Sprintf("must be between 0 (no spinning) and %s", FormatDuration(MaxRecvSpin)))
	}
	if x := cy.Exchange; x != ExchangePipelined && x != ExchangeWait {
		p.add("cycle.exchange", x, `must be "pipelined" or "wait"`)
	}
	if s := cy.SHM; !filepath.IsAbs(s) || strings.HasSuffix(s, "/") {
		p.add("cycle.shm", s, "must be an absolute file path, e.g. "+DefaultSHM)
	}
}

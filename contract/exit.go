package contract

// The exit codes of ecagent and of the cycle process (ecagent-cycle, or
// `ecagent cycle`): both programs' help texts name them, and the agent
// reads a cycle process's.
const (
	// ExitOK: done, or stopped by SIGTERM (how a service manager stops a
	// service).
	ExitOK = 0
	// ExitFailure: a runtime failure (link, bus, I/O).
	ExitFailure = 1
	// ExitUsage: a usage or configuration error; the message names the
	// flag or key, the value and what is allowed.
	ExitUsage = 2
	// ExitBusMismatch: the segment is not as configured (the slave
	// count, a slave refusing a state).
	ExitBusMismatch = 3
	// ExitInUse: a maintenance command refused to open an interface
	// another master drives (ecagent only; --second-master overrides),
	// or `run` found another agent serving its cycle.shm.
	ExitInUse = 4
	// ExitInterrupted: interrupted (SIGINT) before the work was done.
	ExitInterrupted = 130
)

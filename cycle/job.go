package cycle

import "github.com/ecagent/ecagent/shm"

// Job is application work the engine runs on the cycle thread every cycle,
// before the exchange: a CiA 402 drive helper, for instance, reads the
// statusword of the last exchange and writes the controlword and target
// of this one. Neither method may allocate, block or do I/O.
type Job interface {
	// Cycle runs at monotonic time now (ns). It returns true with ev
	// filled in (Kind, Slave, Value, Text; the engine sets Cycle and
	// Time) when something happened worth an event.
	Cycle(now int64, ev *shm.Event) bool
	// Command offers the job a command from the agent; it returns false
	// when the command is not for it, else true and, if it refused the
	// command, a reason.
	Command(c *shm.Command) (taken bool, reason string)
}

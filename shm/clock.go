package shm

import "github.com/ecagent/ecagent/internal/realtime/monotime"

// Now returns CLOCK_MONOTONIC in nanoseconds: the clock of every time the
// cycle process writes to the segment (a sample's deadline and wake-up,
// an event's time, the heartbeat), so that a reader in another process
// can tell how old they are. It is the runtime's clock read through the
// vDSO, the one the cycle and the master read (cycle/rt.Now).
func Now() int64 { return monotime.Now() }

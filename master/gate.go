package master

import "context"

// Gate lets acyclic transactions (recovery, SDO, diagnostics) run while
// the cyclic exchange runs in another goroutine: every Bus frame calls
// Acquire before it draws its datagram index and sends, and Release once
// its answer arrived or its timeout passed. A retry is a new frame and
// acquires again, so a frame that went unanswered gives the link back to
// the cycle before it is sent again.
//
// The cycle engine implements it: it opens a turn after each exchange for
// the slack left in the period and does not start its next exchange before
// Release. Acquire returns the context's error when ctx ends first; an
// implementation must be safe for use from two goroutines and must order
// the holder's link use before the next exchange (a mutex or channel does).
type Gate interface {
	Acquire(ctx context.Context) error
	Release()
}

// SetGate makes every Bus transaction of the master (bring-up steps,
// state changes, SII reads, mailbox transfers, Recover, Reconnect,
// CheckSlaves) pass through g, and wait Config.RecoveryTimeout rather than
// Config.Timeout for each answer. With a gate set, state changes to SAFEOP
// or OP do not run cyclic frames themselves: the cycle that holds the gate
// keeps the outputs valid. A nil g removes the gate.
//
// SetGate must be called while no Bus transaction runs (before the cycle
// starts, or between two recoveries); the cyclic exchange (ExchangeUntil)
// never consults the gate.
func (m *Master) SetGate(g Gate) {
	m.bus.gate = g
	m.bus.gatedTimeout = m.cfg.RecoveryTimeout
}

// gated reports whether a gate is set: the cyclic exchange then runs in
// another goroutine and must not be called from a Bus user.
func (m *Master) gated() bool { return m.bus.gate != nil }

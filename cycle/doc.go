// Package cycle is the real-time cycle engine. It runs in its own small
// process (ecagent-cycle, whose body is cycle/process), on a locked OS
// thread with SCHED_FIFO, pinned and with memory locked where the host
// allows, and after bring-up it allocates nothing, so the garbage
// collector never runs there.
//
// Every cycle it sleeps to an absolute deadline on CLOCK_MONOTONIC, applies
// pending commands from the agent at the cycle boundary, exchanges the
// process data with the master, and writes one fixed-size sample to the
// shared-memory ring, the process image to the snapshot and a heartbeat.
// A cycle that ends after the next deadline is an overrun; the schedule
// then skips the deadlines it missed instead of bursting to catch up, and
// the next sample says how many were skipped. Everything else — HTTP,
// Prometheus, MQTT — happens in the agent process, which reads copies.
package cycle

// Package process is the body of the cycle process, the small program
// ecagent-cycle (cmd/ecagent-cycle) that `ecagent run` and `ecagent bench`
// start beside the agent: it attaches to the shared-memory segment the
// agent created, opens the link, brings the bus to OP, binds the CiA 402
// drives, writes the bus description (BusInfo) and runs the real-time
// cycle (package cycle) until SIGTERM, with the recovery worker beside it.
//
// Its configuration is [Config], a plain JSON file the agent writes next
// to the segment: only the keys the cycle reads, under the names the
// agent's configuration gives them (bus.*, cycle.*, log.*, drives). The
// package imports no configuration library, no HTTP, no crypto and no
// exporter, so the process stays small: its whole dependency closure is
// the master, the cycle engine, shared memory and the standard library
// (test/cycle_closure_test.go keeps it so).
package process

// Package contract is what the two processes of ecagent agree on besides
// the layout of their shared memory (package shm): the agent (ecagent run,
// ecagent bench) and the cycle process (ecagent-cycle, or the hidden
// `ecagent cycle`) both import it, and it imports no package of either.
//
// It holds:
//
//   - the configuration the cycle process receives ([Config]: the bus.*,
//     cycle.* and log.* keys and the drives), its defaults ([Default]), its
//     one set of bounds and its one validation ([Config.Problems]). The
//     agent's configuration (agent/config) is made of these same types,
//     with the key names, help texts and bounds written here once;
//   - the bus description the cycle process writes beside the segment
//     ([BusInfo], [ReadBusInfo], [WriteBusInfo]);
//   - the files beside the segment and who may use them ([CheckOwnFile],
//     [SideFiles]);
//   - the exit codes of both programs ([ExitBusMismatch] …) and the
//     bring-up failure report ([BringUpFailure]) the cycle process writes
//     to its --report-fd;
//   - the socket pair that links a cycle process to a simulated segment
//     ([SocketPair]).
//
// It depends on the standard library only, so that the cycle process's
// closure stays small (test/cycle_closure_test.go) and the agent's holds
// nothing of the cycle process's body (test/layering_test.go).
package contract

// Command ecagent-cycle is the real-time cycle process of ecagent: the
// small program that `ecagent run` and `ecagent bench` start and supervise.
// It attaches to the shared-memory segment the agent created, brings the
// bus to OP and runs the cycle until SIGTERM or SIGINT, allocating nothing
// after bring-up (package cycle/process). It is a program of its own so
// that nothing of the agent — HTTP, TLS, exporters, MQTT, the YAML
// configuration — is in its memory; where it is not installed, the agent
// runs the same code as its hidden mode `ecagent cycle`.
//
//	ecagent-cycle (--config FILE | --config-fd N) [--shm PATH] [--link-fd N] [--report-fd N] [--cycles N]
//
// Exit codes (package contract): 0 success, 1 runtime failure (link, bus,
// I/O), 2 usage or configuration error, 3 the segment is not as
// configured (slave count, a slave refusing a state).
package main

import (
	"os"

	"github.com/ecagent/ecagent/cycle/process"
)

func main() { os.Exit(process.Main("ecagent-cycle", os.Args[1:], os.Stdout, os.Stderr)) }

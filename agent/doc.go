// Package agent is the agent process of ecagent (`ecagent run`): it starts
// the cycle process — the program ecagent-cycle (cycle/process), given its
// configuration by config.Config.CycleConfig — or attaches to one that
// survived an earlier agent, supervises it, and consumes what it writes to
// shared memory for the status line, the metrics, OTLP and MQTT.
//
// It imports nothing of the cycle process's body (cycle/..., the master,
// its links, the simulator): what the two processes share is package shm
// and package contract (test/layering_test.go holds it so).
package agent

// Package agent is the agent process of ecagent (`ecagent run`): it starts
// the cycle process — the program ecagent-cycle (cycle/program), given its
// configuration by config.Config.CycleConfig — or attaches to one that
// survived an earlier agent, supervises it, and consumes what it writes to
// shared memory for the status line, the metrics, OTLP and MQTT.
// OpenSegment opens a segment directly for the commands that talk to a bus
// outside the agent (scan, sdo).
package agent

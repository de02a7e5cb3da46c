// Package tracefs keeps a tracefs instance of its own (instances/NAME
// under the tracefs mount) limited to one CPU and a few events, and reads
// its ring buffer in binary pages (per_cpu/cpuN/trace_pipe_raw): the
// events' layouts come from the instance's events/*/format files, so no
// event is ever parsed as text.
//
// It needs the standard library and x/sys only, and runs in the agent
// process, never in the cycle process.
package tracefs

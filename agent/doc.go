// Package agent wires the parts of ecagent together: it opens the segment
// (a network interface, or the built-in simulated segment), brings the bus
// to OP through the master and runs the cycle, reporting what it sees.
package agent

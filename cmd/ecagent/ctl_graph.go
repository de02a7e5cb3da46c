package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func graphCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "graph", help{
		usage: "[--json]",
		about: "Print the topology of the segment as a Graphviz DOT graph, like `ethercat graph`: a node " +
			"per slave, an edge from the port of the slave (or the master) each one hangs off to its " +
			"port 0.",
		groups: ctlGroups(),
		notes: "Ports are read from DL status (0x0110): a frame leaves a slave through its open ports in " +
			"the order 3, 1, 2, so the slaves after it in ring order are assigned to them in that " +
			"order. --json prints the slave list the graph is drawn from. " + ctlNotes,
		examples: []string{
			"ecagent graph | dot -Tsvg > bus.svg",
		},
	})
	c := addCtlFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if err := c.wholeSegment("graph"); err != nil {
		return err
	}
	var res maintenance.SlavesResult
	if err := c.call(ctx, e, "graph", []maintenance.Request{{Op: maintenance.OpSlaves}}, &res); err != nil {
		return err
	}
	return c.print(e.stdout, &res, func(w io.Writer) { printGraph(w, res.Slaves) })
}

// downstreamOrder is the order in which a frame leaves a slave's ports
// after entering on port 0.
func downstreamOrder() [3]int { return [3]int{3, 1, 2} }

// parentPorts returns, for each slave, the port of its parent that leads
// to it (-1 for a slave on the master): each parent's open downstream
// ports in processing order, given to its children in ring order.
func parentPorts(ss []maintenance.SlaveInfo) []int {
	out := make([]int, len(ss))
	used := make([]int, len(ss)) // children of each slave so far
	for i, s := range ss {
		out[i] = -1
		if s.Parent < 0 || s.Parent >= len(ss) {
			continue
		}
		p := ss[s.Parent]
		n := 0
		for _, port := range downstreamOrder() {
			if !p.Ports[port].Comm || p.Ports[port].Loop {
				continue
			}
			if n == used[s.Parent] {
				out[i] = port
				break
			}
			n++
		}
		used[s.Parent]++
	}
	return out
}

// printGraph writes the DOT graph.
func printGraph(w io.Writer, ss []maintenance.SlaveInfo) {
	fmt.Fprintln(w, "digraph ethercat {")
	fmt.Fprintln(w, "  rankdir=LR;")
	fmt.Fprintln(w, "  node [shape=box];")
	fmt.Fprintln(w, `  master [label="master", shape=ellipse];`)
	for _, s := range ss {
		name := s.OrderCode
		if name == "" {
			name = slaveName(s)
		}
		fmt.Fprintf(w, "  slave%d [label=\"%d: %s\"];\n", s.Position, s.Position, name)
	}
	ports := parentPorts(ss)
	for i, s := range ss {
		switch {
		case s.Parent < 0:
			fmt.Fprintf(w, "  master -> slave%d [headlabel=\"0\"];\n", s.Position)
		case ports[i] < 0:
			fmt.Fprintf(w, "  slave%d -> slave%d [headlabel=\"0\", style=dashed];\n", s.Parent, s.Position)
		default:
			fmt.Fprintf(w, "  slave%d -> slave%d [taillabel=\"%d\", headlabel=\"0\"];\n", s.Parent, s.Position, ports[i])
		}
	}
	fmt.Fprintln(w, "}")
}

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func rescanCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "rescan", help{
		usage: "[--json]",
		about: "Count the slaves that answer now and check each known one at its station address, " +
			"like `ethercat rescan`, without disturbing the running bus.",
		groups: ctlGroups(),
		notes: "It changes nothing: under the agent a slave that comes back is reconfigured and taken " +
			"to OP by its recovery; a slave added to the segment needs the agent restarted with the " +
			"new bus.expectedslaves. Exit 3 when the count differs from the known slaves. " + ctlNotes,
		examples: []string{"ecagent rescan"},
	})
	c := addCtlFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if err := c.wholeSegment("rescan"); err != nil {
		return err
	}
	var res maintenance.RescanResult
	if err := c.call(ctx, e, "rescan", []maintenance.Request{{Op: maintenance.OpRescan}}, &res); err != nil {
		return err
	}
	if err := c.print(e.stdout, &res, func(w io.Writer) {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "Known slaves:\t%d\n", res.Known)
		fmt.Fprintf(tw, "Answering now:\t%d\n", res.Answering)
		_ = tw.Flush()
		for _, p := range res.Missing {
			fmt.Fprintf(w, "slave %d does not answer at its station address\n", p)
		}
	}); err != nil {
		return err
	}
	if res.Answering != res.Known || len(res.Missing) > 0 {
		return &rescanMismatch{res}
	}
	return nil
}

// rescanMismatch is a segment that is not what the master knows; it exits
// with exitBusMismatch.
type rescanMismatch struct{ res maintenance.RescanResult }

func (e *rescanMismatch) Error() string {
	return fmt.Sprintf("rescan: %d slaves answer, %d known, %d known ones missing",
		e.res.Answering, e.res.Known, len(e.res.Missing))
}

func eoeCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "eoe", help{
		usage: "[--json]",
		about: "List the slaves whose SII names Ethernet over EtherCAT (EoE) among their mailbox " +
			"protocols, like `ethercat eoe`.",
		groups: ctlGroups(),
		notes: "ecagent runs no EoE handler: it tunnels no Ethernet frames and makes no virtual " +
			"interface, so there are no handler counters to show. " + ctlNotes,
		examples: []string{"ecagent eoe"},
	})
	c := addCtlFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	var all maintenance.SlavesResult
	if err := c.call(ctx, e, "eoe", []maintenance.Request{{Op: maintenance.OpSlaves}}, &all); err != nil {
		return err
	}
	res := maintenance.SlavesResult{Slaves: []maintenance.SlaveInfo{}}
	for _, s := range all.Slaves {
		if c.selected(s.Position) && containsWord(s.Protocols, "EoE") {
			res.Slaves = append(res.Slaves, s)
		}
	}
	return c.print(e.stdout, &res, func(w io.Writer) {
		if len(res.Slaves) == 0 {
			fmt.Fprintln(w, "no slave with EoE")
			return
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "POS\tSTATE\tPROTOCOLS\tNAME")
		for _, s := range res.Slaves {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Position, s.State, s.Protocols, slaveName(s))
		}
		_ = tw.Flush()
	})
}

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ecagent/ecagent/master"
)

func scanCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "scan", "[--iface IF] [flags]",
		"Find the slaves of a segment, give them station addresses, read their SII and\n"+
			"print a table: position, station address, AL state, identity, name, process\n"+
			"data size and DC support. Without --iface it scans the built-in simulated\n"+
			"segment (--devices). The slaves are left in INIT or the state they were in.")
	bus := addBusFlags(fs)
	expected := fs.Int("expected-slaves", 0, "fail (exit 3) unless exactly this many slaves answer; 0 accepts any")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	_, slaves, closeBus, err := bus.scanBus(ctx, e, *expected)
	if err != nil {
		return wrapUnlessUsage("scan", err)
	}
	defer closeBus()
	printSlaves(e.stdout, slaves)
	return nil
}

// printSlaves writes the slave table, one row per slave in ring order.
func printSlaves(w io.Writer, slaves []*master.Slave) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tADDR\tSTATE\tVENDOR\tPRODUCT\tREVISION\tIN\tOUT\tDC\tNAME")
	for _, s := range slaves {
		dc := "no"
		if s.DC {
			dc = "yes"
		}
		name := s.Name
		if name == "" {
			name = s.OrderCode
		}
		fmt.Fprintf(tw, "%d\t%#04x\t%v\t%#08x\t%#08x\t%#08x\t%d\t%d\t%s\t%s\n",
			s.Position, s.StationAddress, s.Status(), s.Identity.VendorID, s.Identity.ProductCode,
			s.Identity.Revision, s.InputBits, s.OutputBits, dc, name)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "%d slaves\n", len(slaves))
}

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func diagCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "diag", help{
		usage: "-p N [--json]",
		about: "Diagnose one slave from its registers, in words: AL state and status code, each port's " +
			"link and error counters, the watchdogs, and the SyncManagers and FMMUs in use.",
		groups: ctlGroups(),
		notes: "It only reads. Counters saturate at 255 (ecagent crc shows their growth). A register " +
			"block the slave does not answer is named at the end. " + ctlNotes,
		examples: []string{"ecagent diag -p 5", "ecagent diag -a 100:2 --json"},
	})
	c := addCtlFlags(fs)
	slave, err := c.oneSlave(fs, args)
	if err != nil {
		return err
	}
	var res maintenance.DiagResult
	if err := c.call(ctx, e, "diag", []maintenance.Request{{Op: maintenance.OpDiag, Slave: slave}}, &res); err != nil {
		return err
	}
	return c.print(e.stdout, &res, func(w io.Writer) { printDiag(w, res) })
}

// printDiag prints a slave's diagnosis in words.
func printDiag(w io.Writer, d maintenance.DiagResult) {
	fmt.Fprintf(w, "%s\n", d.Label)
	state := d.State
	if d.Error {
		state += ", error indicated"
	}
	fmt.Fprintf(w, "AL state: %s\n", state)
	if d.Code != 0 {
		fmt.Fprintf(w, "AL status code: %#04x (%s)\n", d.Code, d.CodeText)
	} else {
		fmt.Fprintln(w, "AL status code: 0x0000 (no error)")
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PORT\tTYPE\tLINK\tLOOP\tCOMM\tCRC ERR\tRX ERR\tFWD RX ERR\tLOST LINK")
	for _, p := range d.Ports {
		loop := "open"
		if p.Loop {
			loop = "closed"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", p.Port, p.Kind, updown(p.Link), loop, yesNo(p.Comm),
			p.InvalidFrame, p.RXError, p.ForwardedRX, p.LostLink)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "Processing unit errors: %d  PDI errors: %d\n", d.Processing, d.PDI)
	wd := d.Watchdog
	onOff := func(ms float64) string {
		if ms == 0 {
			return "off"
		}
		return fmt.Sprintf("%.1f ms", ms)
	}
	expired := "running"
	if !wd.ProcessDataOK {
		expired = "expired or not running"
	}
	fmt.Fprintf(w, "Watchdog: process data %s (%s, expired %d times), PDI %s (expired %d times)\n",
		onOff(wd.ProcessDataMillis), expired, wd.ProcessDataExpired, onOff(wd.PDIMillis), wd.PDIExpired)
	fmt.Fprintln(w, "SyncManagers:")
	for _, sm := range d.SyncManagers {
		en := "enabled"
		if !sm.Enabled {
			en = "disabled"
		}
		wdog := ""
		if sm.Watchdog {
			wdog = ", watchdog on"
		}
		fmt.Fprintf(w, "  SM%d %#04x+%d %s, %s, %s%s\n", sm.Index, sm.Start, sm.Length, sm.Mode, sm.Dir, en, wdog)
	}
	fmt.Fprintln(w, "FMMUs:")
	for _, f := range d.FMMUs {
		act := "active"
		if !f.Active {
			act = "inactive"
		}
		fmt.Fprintf(w, "  FMMU%d logical %#08x+%d → %#04x, %s, %s\n", f.Index, f.LogicalStart, f.Length, f.Physical, f.Type, act)
	}
	for _, u := range d.Unreadable {
		fmt.Fprintf(w, "Not readable: %s\n", u)
	}
}

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func slavesCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "slaves", help{
		usage: "[-v] [--json] [--iface IF | --cycle.shm PATH]",
		about: "List the slaves with their live AL state, error flag and identity, like `ethercat slaves`; " +
			"ALIAS:POS is the last station alias before the slave and the position after it.",
		groups: ctlGroups("verbose"),
		notes: "-v adds per slave the ports (descriptor, link, loop, communication from DL status " +
			"0x0110), DC support, the mailbox and its protocols and the SII strings. " + ctlNotes,
		examples: []string{
			"ecagent slaves",
			"ecagent slaves -v --iface eth1",
			"ecagent slaves --json | jq '.slaves[] | select(.error)'",
		},
	})
	verbose := fs.BoolP("verbose", "v", false, "print every detail of each slave")
	c := addCtlFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	var all maintenance.SlavesResult
	if err := c.call(ctx, e, "slaves", []maintenance.Request{{Op: maintenance.OpSlaves}}, &all); err != nil {
		return err
	}
	// ALIAS:POS counts from the aliases of the whole segment.
	res := maintenance.SlavesResult{Slaves: []maintenance.SlaveInfo{}}
	for _, s := range all.Slaves {
		if c.selected(s.Position) {
			res.Slaves = append(res.Slaves, s)
		}
	}
	return c.print(e.stdout, &res, func(w io.Writer) {
		ap := aliasPositions(all.Slaves)
		if *verbose {
			printSlavesVerbose(w, res.Slaves, ap)
			return
		}
		printSlaveTable(w, res.Slaves, ap)
	})
}

// aliasPositions returns each slave's alias:position address as IgH's
// tool prints it: the last non-zero station alias at or before the slave,
// and the slave's distance from the slave that has it.
func aliasPositions(ss []maintenance.SlaveInfo) map[int]string {
	out := make(map[int]string, len(ss))
	alias, from := uint16(0), 0
	for i, s := range ss {
		if s.Alias != 0 {
			alias, from = s.Alias, i
		}
		out[s.Position] = fmt.Sprintf("%d:%d", alias, i-from)
	}
	return out
}

// printSlaveTable prints one line per slave.
func printSlaveTable(w io.Writer, ss []maintenance.SlaveInfo, ap map[int]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tALIAS:POS\tSTATE\tERR\tVENDOR\tPRODUCT\tREVISION\tNAME")
	for _, s := range ss {
		flag := "+"
		if s.Error {
			flag = "E"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%#08x\t%#08x\t%#08x\t%s\n", s.Position, ap[s.Position], s.State, flag,
			s.Vendor, s.Product, s.Revision, slaveName(s))
	}
	_ = tw.Flush()
}

// slaveName is the SII's device name, else its order code.
func slaveName(s maintenance.SlaveInfo) string {
	if s.Name != "" {
		return s.Name
	}
	return s.OrderCode
}

// printSlavesVerbose prints a block per slave.
func printSlavesVerbose(w io.Writer, ss []maintenance.SlaveInfo, ap map[int]string) {
	for i, s := range ss {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "=== Slave %d (%s) ===\n", s.Position, ap[s.Position])
		fmt.Fprintf(w, "Station address: %#04x  Alias: %d\n", s.Station, s.Alias)
		fmt.Fprintf(w, "State: %s  Error: %s", s.State, yesNo(s.Error))
		if s.Code != 0 {
			fmt.Fprintf(w, "  AL status code %#04x: %s", s.Code, s.CodeText)
		}
		fmt.Fprintln(w)
		fmt.Fprintf(w, "Identity: vendor %#08x  product %#08x  revision %#08x  serial %#08x\n",
			s.Vendor, s.Product, s.Revision, s.Serial)
		fmt.Fprintf(w, "Name: %s  Order code: %s\n", s.Name, s.OrderCode)
		parent := "master"
		if s.Parent >= 0 {
			parent = fmt.Sprintf("slave %d", s.Parent)
		}
		fmt.Fprintf(w, "Upstream: %s  DC: %s  Process data: %d bits in, %d bits out\n",
			parent, yesNo(s.DC), s.InBits, s.OutBits)
		fmt.Fprintln(w, "Ports:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  PORT\tTYPE\tLINK\tLOOP\tCOMM")
		for p, port := range s.Ports {
			loop := "open"
			if port.Loop {
				loop = "closed"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\n", p, port.Kind, updown(port.Link), loop, yesNo(port.Comm))
		}
		_ = tw.Flush()
		if mb := s.Mailbox; mb != nil {
			fmt.Fprintf(w, "Mailbox: receive %#04x/%d  send %#04x/%d  protocols %s\n",
				mb.RxOffset, mb.RxSize, mb.TxOffset, mb.TxSize, s.Protocols)
		} else {
			fmt.Fprintln(w, "Mailbox: none")
		}
		fmt.Fprintln(w, "SII strings:")
		for j, str := range s.Strings {
			fmt.Fprintf(w, "  %d: %q\n", j+1, str)
		}
	}
}

// updown prints a link.
func updown(b bool) string {
	if b {
		return "up"
	}
	return "down"
}

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func pdosCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "pdos", help{
		usage: "[-p N] [--esi DIR]... [--json]",
		about: "Print each slave's process-data SyncManagers, the PDOs assigned to them and their mapped " +
			"entries, with each entry's place in the process image (byte.bit), like `ethercat pdos`; " +
			"with --esi, each entry's name, type and unit from its device's ESI.",
		groups: ctlGroups("esi"),
		notes: "Where the assignment came from is printed per slave: the SII, the slave's CoE objects " +
			"(0x1C12/0x1C13) or the configuration (bus.pdo). On a segment opened here the command " +
			"brings the bus up as the agent would, to map the image. " + ctlNotes,
		examples: []string{"ecagent pdos -p 3", "ecagent pdos --json | jq '.slaves[1].rx_pdos'"},
	})
	c := addCtlFlags(fs)
	esi := addESIFlag(fs) // cmd/ecagent/esi.go
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	c.bringUp = true
	var res pdosWithESI
	if len(*esi) == 0 {
		if err := c.call(ctx, e, "pdos", []maintenance.Request{{Op: maintenance.OpPDOs}}, &res.PDOsResult); err != nil {
			return err
		}
		res.PDOsResult = c.pdosSelected(res.PDOsResult)
		return c.print(e.stdout, &res.PDOsResult, func(w io.Writer) { printPDOs(w, res.PDOsResult, nil) })
	}
	var slaves maintenance.SlavesResult // the identities the ESI is looked up by
	reqs := []maintenance.Request{{Op: maintenance.OpPDOs}, {Op: maintenance.OpSlaves}}
	if err := c.call(ctx, e, "pdos", reqs, &res.PDOsResult, &slaves); err != nil {
		return err
	}
	res.PDOsResult = c.pdosSelected(res.PDOsResult)
	res.ESI = esiLabels(*esi, res.PDOsResult, slaves, func(err error) { fmt.Fprintf(e.stderr, "pdos: --esi: %v\n", err) })
	return c.print(e.stdout, &res, func(w io.Writer) { printPDOs(w, res.PDOsResult, res.ESI) })
}

func domainsCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "domains", help{
		usage: "[--json]",
		about: "Print the layout of the process image, like `ethercat domains`: its size and where each " +
			"slave's outputs and inputs lie (byte.bit and bit length; outputs first, then inputs).",
		groups:   ctlGroups(),
		notes:    "On a segment opened here the command brings the bus up as the agent would. " + ctlNotes,
		examples: []string{"ecagent domains", "ecagent domains --json"},
	})
	c := addCtlFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if err := c.wholeSegment("domains"); err != nil {
		return err
	}
	c.bringUp = true
	var res maintenance.PDOsResult
	if err := c.call(ctx, e, "domains", []maintenance.Request{{Op: maintenance.OpPDOs}}, &res); err != nil {
		return err
	}
	return c.print(e.stdout, &res, func(w io.Writer) { printDomains(w, res) })
}

// bitPos prints a bit offset of the image as byte.bit.
func bitPos(off int) string { return fmt.Sprintf("%d.%d", off/8, off%8) }

// printPDOs prints the assignment of every slave; named adds the ESI's
// name, type and unit to each entry it describes (--esi).
func printPDOs(w io.Writer, res maintenance.PDOsResult, named []esiNamed) {
	for i, s := range res.Slaves {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "=== Slave %d (%s) === assignment from %s\n", s.Position, s.Name, s.Source)
		for _, sm := range s.SyncManagers {
			fmt.Fprintf(w, "SM%d: %s, start %#04x, %d bytes, control %#02x\n", sm.Index, sm.Type, sm.Start, sm.Bytes, sm.Control)
			for k, list := range [][]maintenance.PDOInfo{s.RxPDOs, s.TxPDOs} {
				for _, p := range list {
					if p.SM != sm.Index {
						continue
					}
					fmt.Fprintf(w, "  PDO %#04x\n", p.Index)
					output := k == 0 // RxPDOs: the outputs
					for _, en := range p.Entries {
						if en.Index == 0 {
							fmt.Fprintf(w, "    (gap)      %2d bit  image %s\n", en.Bits, bitPos(en.Offset))
							continue
						}
						fmt.Fprintf(w, "    %#04x:%02x  %2d bit  image %s", en.Index, en.SubIndex, en.Bits, bitPos(en.Offset))
						if l := esiLabel(named, s.Position, output, p.Index, en); l != "" {
							fmt.Fprintf(w, "  %s", l)
						}
						fmt.Fprintln(w)
					}
				}
			}
		}
	}
}

func printDomains(w io.Writer, res maintenance.PDOsResult) {
	fmt.Fprintf(w, "Process image: %d bytes (%d output bytes at 0, %d input bytes at %d)\n",
		res.OutputBytes+res.InputBytes, res.OutputBytes, res.InputBytes, res.OutputBytes)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tNAME\tOUTPUTS\tBITS\tINPUTS\tBITS")
	for _, s := range res.Slaves {
		o, in := "-", "-"
		if s.Outputs.Len > 0 {
			o = bitPos(s.Outputs.Offset)
		}
		if s.Inputs.Len > 0 {
			in = bitPos(s.Inputs.Offset)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d\n", s.Position, s.Name, o, s.Outputs.Len, in, s.Inputs.Len)
	}
	_ = tw.Flush()
}

// pdosSelected keeps the slaves -p or -a selects.
func (c ctlFlags) pdosSelected(r maintenance.PDOsResult) maintenance.PDOsResult {
	kept := []maintenance.SlavePDOs{}
	for _, s := range r.Slaves {
		if c.selected(s.Position) {
			kept = append(kept, s)
		}
	}
	r.Slaves = kept
	return r
}

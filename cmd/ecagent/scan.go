package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/master"
)

func scanCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "scan", help{
		usage: "[--sdo] [--expected-slaves N]",
		about: "List the slaves of the segment: position, station address, AL state, identity, process " +
			"data size, DC support and name; with --sdo, each CoE slave's object dictionary too.",
		groups: ctlGroups("sdo", "expected-slaves"),
		notes: "--sdo lists, for each slave with a CoE mailbox, its objects and entries as the SDO " +
			"information service describes them (index, object code, name, data type, bit length, access) " +
			"with the short values. A segment opened here is scanned (its slaves stay in INIT), and " +
			"taken to PREOP for --sdo first. " + ctlNotes,
		examples: []string{
			"ecagent scan --expected-slaves 7",
			"ecagent scan --sim --devices EK1100,EL2004,EL1014 --sdo",
		},
	})
	expected := fs.Int("expected-slaves", 0, "fail (exit 3) unless exactly this many slaves answer; 0: any")
	sdo := fs.Bool("sdo", false, "also print each CoE slave's object dictionary")
	c := addCtlFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c.preop = *sdo
	sess, err := c.open(ctx, e, "scan")
	if err != nil {
		return err
	}
	defer sess.close()
	if err := c.resolve(ctx, "scan", sess, nil); err != nil {
		return err
	}
	var list maintenance.SlavesResult
	if err := callAll("scan", []maintenance.Request{{Op: maintenance.OpSlaves}}, []any{&list}, func(int) {},
		func(r maintenance.Request) (json.RawMessage, error) { return sess.call(ctx, r, nil) }); err != nil {
		return err
	}
	if *expected > 0 && len(list.Slaves) != *expected {
		return fmt.Errorf("scan: %w", &master.SlaveCountError{Expected: *expected, Found: len(list.Slaves)})
	}
	res := scanResult{Slaves: []maintenance.SlaveInfo{}}
	for _, s := range list.Slaves {
		if c.selected(s.Position) {
			res.Slaves = append(res.Slaves, s)
		}
	}
	failed := 0
	if *sdo {
		for _, s := range res.Slaves {
			var d maintenance.SDOInfoResult
			err := callAll("scan", []maintenance.Request{{Op: maintenance.OpSDOInfo, Slave: s.Position, Values: true}}, []any{&d},
				func(int) {}, func(r maintenance.Request) (json.RawMessage, error) { return sess.call(ctx, r, nil) })
			if err != nil {
				fmt.Fprintf(e.stderr, "%v\n", err)
				failed++
				continue
			}
			res.Dictionaries = append(res.Dictionaries, d)
		}
	}
	if err := c.print(e.stdout, &res, func(w io.Writer) {
		printSlaves(w, res.Slaves)
		for _, d := range res.Dictionaries {
			printDictionary(w, d)
		}
	}); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("scan: the object dictionary of %d slaves could not be read", failed)
	}
	return nil
}

// scanResult is what scan prints.
type scanResult struct {
	Slaves       []maintenance.SlaveInfo     `json:"slaves"`
	Dictionaries []maintenance.SDOInfoResult `json:"dictionaries,omitempty"`
}

// printDictionary prints a slave's CoE object dictionary as the SDO
// information service describes it, with the short values read. A slave
// without a CoE mailbox, or whose mailbox refuses the SDO information
// service, gets one line.
func printDictionary(w io.Writer, d maintenance.SDOInfoResult) {
	switch {
	case !d.CoE:
		fmt.Fprintf(w, "\n%s: no CoE mailbox\n", d.Label)
		return
	case !d.Info:
		fmt.Fprintf(w, "\n%s: no SDO information (%s)\n", d.Label, d.Reason)
		return
	}
	fmt.Fprintf(w, "\n%s: %d objects\n", d.Label, len(d.Objects))
	for _, o := range d.Objects {
		fmt.Fprintf(w, "%#04x %s %q, max sub %d\n", o.Index, o.ObjectCode, o.Name, o.MaxSub)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, en := range o.Entries {
			fmt.Fprintf(tw, "  %#04x:%02x\t%s\t%d bit\t%s\t%q\t", o.Index, en.Sub, en.TypeName, en.BitLength, en.Access, en.Name)
			if en.Value != nil {
				fmt.Fprint(tw, formatEntryValue(en.Value, coe.DataType(en.DataType)))
			}
			fmt.Fprintln(tw)
		}
		_ = tw.Flush()
	}
}

// formatEntryValue formats a value read from the dictionary: strings
// quoted, 1, 2 and 4 bytes as hex and decimal (signed for the signed
// types), anything else as hex bytes.
func formatEntryValue(v []byte, t coe.DataType) string {
	const (
		integer8  = 0x0002
		integer16 = 0x0003
		integer32 = 0x0004
		visible   = 0x0009
	)
	if t == visible {
		return fmt.Sprintf("= %q", v)
	}
	var b strings.Builder
	b.WriteString("= ")
	typ := sdoType{}
	if t == integer8 || t == integer16 || t == integer32 {
		typ = sdoType{name: fmt.Sprintf("i%d", 8*len(v)), size: len(v), signed: true}
	}
	printSDOValue(&b, v, typ)
	return strings.TrimSuffix(b.String(), "\n")
}

// printSlaves writes the slave table, one row per slave in ring order.
func printSlaves(w io.Writer, slaves []maintenance.SlaveInfo) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tADDR\tSTATE\tVENDOR\tPRODUCT\tREVISION\tIN\tOUT\tDC\tNAME")
	for _, s := range slaves {
		name := s.Name
		if name == "" {
			name = s.OrderCode
		}
		state := s.State
		if s.Error {
			state += "+ERR"
		}
		fmt.Fprintf(tw, "%d\t%#04x\t%s\t%#08x\t%#08x\t%#08x\t%d\t%d\t%s\t%s\n",
			s.Position, s.Station, state, s.Vendor, s.Product, s.Revision, s.InBits, s.OutBits, yesNo(s.DC), name)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "%d slaves\n", len(slaves))
}

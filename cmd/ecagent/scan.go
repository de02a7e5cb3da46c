package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ecagent/ecagent/ethercat/coe"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
)

func scanCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "scan", help{
		usage: "[--iface IF | --devices LIST] [--expected-slaves N] [--sdo]",
		about: "Find the slaves of a segment, give them station addresses, read their SII and print " +
			"a table: position, station address, AL state, identity, name, process data size and DC " +
			"support.",
		notes: "Without --iface it scans the built-in simulated segment (--devices). The slaves stay in " +
			"INIT or the state they were in; --sdo takes them to PREOP and lists, for each slave with " +
			"a CoE mailbox, its object dictionary (index, object code, name, data type, bit length, " +
			"access and the value when short).",
		examples: []string{
			"ecagent scan --iface eth1 --expected-slaves 7",
			"ecagent scan --devices EK1100,EL2004,EL1014 --sdo",
		},
	})
	bus := addBusFlags(fs)
	expected := fs.Int("expected-slaves", 0, "fail (exit 3) unless exactly this many slaves answer; 0 accepts any")
	sdo := fs.Bool("sdo", false, "also print each CoE slave's object dictionary (takes the slaves to PREOP)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, slaves, closeBus, err := bus.scanBus(ctx, e, *expected)
	if err != nil {
		return wrapUnlessUsage("scan", err)
	}
	defer closeBus()
	printSlaves(e.stdout, slaves)
	if !*sdo {
		return nil
	}
	if err := m.RequestState(ctx, esc.StatePreOp); err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	failed := 0
	for _, s := range slaves {
		if err := printDictionary(ctx, e.stdout, m, s); err != nil {
			fmt.Fprintf(e.stderr, "scan: %v\n", err)
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("scan: the object dictionary of %d slaves could not be read", failed)
	}
	return nil
}

// shortValue is the largest value printed in a dictionary listing.
const shortValue = 64

// printDictionary prints the CoE object dictionary of s as the SDO
// information service describes it, with the values of the readable
// entries that are short. A slave without a CoE mailbox, or whose mailbox
// refuses the SDO information service, gets one line.
// Entries missing inside an object's sub-index range are skipped, as are
// values that cannot be read; an object that cannot be described is an
// error.
func printDictionary(ctx context.Context, w io.Writer, m *master.Master, s *master.Slave) error {
	list, err := m.SDOInfoList(ctx, s)
	if errors.Is(err, master.ErrNoMailbox) {
		fmt.Fprintf(w, "\n%v: no CoE mailbox\n", s)
		return nil
	}
	var (
		abort  *coe.AbortError
		mbxErr *coe.MailboxError
	)
	if errors.As(err, &abort) || errors.As(err, &mbxErr) {
		// The slave has a CoE mailbox but no SDO information service.
		fmt.Fprintf(w, "\n%v: no SDO information (%v)\n", s, errors.Unwrap(err))
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%v: %d objects\n", s, len(list))
	for _, index := range list {
		o, err := m.SDOInfoObject(ctx, s, index)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%#04x %v %q, max sub %d\n", o.Index, o.ObjectCode, o.Name, o.MaxSubIndex)
		if err := printEntries(ctx, w, m, s, o); err != nil {
			return err
		}
	}
	return nil
}

// printEntries prints the entries of object o, aligned in columns.
func printEntries(ctx context.Context, w io.Writer, m *master.Master, s *master.Slave, o coe.ObjectDescription) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	defer func() { _ = tw.Flush() }()
	for sub := range int(o.MaxSubIndex) + 1 {
		e, err := m.SDOInfoEntry(ctx, s, o.Index, uint8(sub))
		var abort *coe.AbortError
		if errors.As(err, &abort) && abort.Code == coe.AbortNoSubIndex {
			continue
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(tw, "  %#04x:%02x\t%v\t%d bit\t%s\t%q\t", o.Index, sub, e.DataType, e.BitLength, e.Access, e.Name)
		if e.Access&coe.AccessReadPreOp != 0 && e.BitLength <= 8*shortValue {
			if v, err := m.SDOUpload(ctx, s, o.Index, uint8(sub)); err == nil {
				fmt.Fprint(tw, formatEntryValue(v, e.DataType))
			}
		}
		fmt.Fprintln(tw)
	}
	return nil
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

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func dataCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "data", help{
		usage: "[--eni FILE] [--json]",
		about: "Print the process image as a hex dump, outputs then inputs, with offsets in the image, " +
			"like `ethercat data`; 'ecagent domains' tells which slave's bits lie where.",
		groups: ctlGroups(),
		notes: "Under a running agent the image is the one its cycle last published (the cycle number " +
			"is printed); on a segment opened here the command brings the bus up and exchanges the " +
			"image once. " + ctlNotes,
		examples: []string{"ecagent data", "watch -n 0.5 ecagent data", "ecagent data --eni line.xml   # by the ENI's names and offsets"},
	})
	c := addCtlFlags(fs)
	eni := fs.String("eni", "", "lay the image out as the ENI `FILE` does (its variables' offsets hold) and list its variables with their values")
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if err := c.wholeSegment("data"); err != nil {
		return err
	}
	c.bringUp = true
	if *eni != "" {
		return eniDataCommand(ctx, e, c, *eni)
	}
	var res maintenance.DataResult
	if err := c.call(ctx, e, "data", []maintenance.Request{{Op: maintenance.OpData}}, &res); err != nil {
		return err
	}
	return c.print(e.stdout, &res, func(w io.Writer) { printData(w, res) })
}

// printData prints the image in lines of 16 bytes.
func printData(w io.Writer, res maintenance.DataResult) {
	fmt.Fprintf(w, "Process image: %d bytes", len(res.Image))
	if res.Cycle != 0 {
		fmt.Fprintf(w, " (cycle %d)", res.Cycle)
	}
	fmt.Fprintln(w)
	out := min(res.OutputBytes, len(res.Image))
	dump := func(title string, from int, b []byte) {
		fmt.Fprintf(w, "%s:\n", title)
		for off := 0; off < len(b); off += 16 {
			fmt.Fprintf(w, "  0x%04x: % x\n", from+off, b[off:min(off+16, len(b))])
		}
	}
	dump("Outputs", 0, res.Image[:out])
	dump("Inputs", out, res.Image[out:])
}

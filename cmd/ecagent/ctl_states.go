package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

func statesCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "states", help{
		usage: "-p N|all STATE --write",
		about: "Request an AL state (INIT, PREOP, BOOT, SAFEOP or OP) of one slave or of all, like " +
			"`ethercat states`, and print the AL status each slave reports afterwards.",
		groups: ctlGroups("write"),
		notes: "A slave that refuses the state is reported with its AL status code and the code's " +
			"standard meaning (ETG.1000.6). Under a running agent its recovery takes a slave that is " +
			"not in OP back there. Needs --write; logged as a maintenance event with your uid. " + ctlNotes,
		examples: []string{
			"ecagent states all OP --write",
			"ecagent states -p 3 PREOP --write",
		},
	})
	write := fs.Bool("write", false, "confirm the state change")
	c := addCtlFlags(fs)
	pos, err := parseArgs(fs, args, 1, 2, "-p N STATE or all STATE")
	if err != nil {
		return err
	}
	req := maintenance.Request{Op: maintenance.OpStates, Slave: maintenance.AllSlaves, Write: true}
	switch {
	case len(pos) == 2 && pos[0] == "all" && !c.sel.given():
		pos = pos[1:]
	default:
		// Every slave only when asked for by name: all.
		if req.Slave, pos, err = c.takeSlave(pos, 0); err != nil {
			return usageError{fmt.Errorf("%w, or all for every slave", err)}
		}
	}
	if len(pos) != 1 {
		return usageError{fmt.Errorf("want -p N STATE or all STATE, got %q", strings.Join(fs.Args(), " "))}
	}
	req.State = strings.ToUpper(pos[0])
	if err := needWrite("states", *write); err != nil {
		return err
	}
	var res maintenance.StatesResult
	if err := c.call(ctx, e, "states", []maintenance.Request{req}, &res); err != nil {
		return err
	}
	return c.print(e.stdout, &res, func(w io.Writer) { printStatuses(w, res) })
}

// printStatuses prints the AL status of each slave after a state request.
func printStatuses(w io.Writer, res maintenance.StatesResult) {
	fmt.Fprintf(w, "requested %s\n", res.Requested)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tSTATE\tERR\tAL STATUS CODE")
	for _, s := range res.Slaves {
		code := "-"
		if s.Code != 0 {
			code = fmt.Sprintf("%#04x %s", s.Code, s.CodeText)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", s.Position, s.State, yesNo(s.Error), code)
	}
	_ = tw.Flush()
}

package main

import (
	"context"
	"fmt"
	"io"
	"reflect"
	"time"

	"github.com/ecagent/ecagent/cycle/maintenance"
	"github.com/ecagent/ecagent/master"
)

// masterReport is what `ecagent master` prints: the master's counters
// and, after two reads, their growth per second.
type masterReport struct {
	maintenance.MasterResult
	// Interval is the time between the reads in seconds (0: one read);
	// Rates the growth of each counter per second over it.
	Interval float64       `json:"interval"`
	Rates    *master.Stats `json:"rates,omitempty"`
}

func masterCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "master", help{
		usage: "[--interval D] [--json]",
		about: "Print the master's view of the segment, like `ethercat master`: the link, the slaves, " +
			"cyclic frames exchanged, lost and with a wrong working counter, stale, invalid, foreign and " +
			"mismatched answers, retries, acyclic frames, CoE emergencies.",
		groups: ctlGroups("interval"),
		notes: "The counters are read twice, --interval apart, and the growth per second is printed " +
			"beside each. Under a running agent they are the cycle process's since it started; on a " +
			"segment opened here they count only this command's own frames. " + ctlNotes,
		examples: []string{
			"ecagent master",
			"ecagent master --interval 0 --json",
		},
	})
	interval := fs.Duration("interval", time.Second, "time between the two reads; 0 reads once")
	c := addCtlFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	if err := c.wholeSegment("master"); err != nil {
		return err
	}
	var first, second maintenance.MasterResult
	took, err := c.readTwice(ctx, e, "master", maintenance.Request{Op: maintenance.OpMaster}, *interval, &first, &second)
	if err != nil {
		return err
	}
	rep := masterReport{MasterResult: first}
	if *interval > 0 {
		rep.MasterResult, rep.Interval = second, interval.Seconds()
		r := statsRates(first.Stats, second.Stats, took)
		rep.Rates = &r
	}
	return c.print(e.stdout, &rep, func(w io.Writer) { printMaster(w, rep) })
}

// statsRates is the growth per second of each counter from a to b, every
// counter of master.Stats (all uint64) however many it has.
func statsRates(a, b master.Stats, d time.Duration) master.Stats {
	var out master.Stats
	va, vb, vo := reflect.ValueOf(a), reflect.ValueOf(b), reflect.ValueOf(&out).Elem()
	for i := range vo.NumField() {
		x, y := va.Field(i).Uint(), vb.Field(i).Uint()
		if y >= x && d > 0 {
			vo.Field(i).SetUint(uint64(float64(y-x) / d.Seconds()))
		}
	}
	return out
}

// printMaster prints the report, a counter per line.
func printMaster(w io.Writer, rep masterReport) {
	link := rep.Interface
	if link == "" {
		link = "(simulated segment)"
	}
	fmt.Fprintf(w, "Link: %s\nSlaves: %d\n", link, rep.Slaves)
	s := rep.Stats
	var r master.Stats
	if rep.Rates != nil {
		r = *rep.Rates
	}
	line := func(name string, v, rate uint64) {
		if rep.Rates == nil {
			fmt.Fprintf(w, "  %-24s %d\n", name+":", v)
			return
		}
		fmt.Fprintf(w, "  %-24s %d (+%d/s)\n", name+":", v, rate)
	}
	fmt.Fprintln(w, "Cyclic:")
	line("cycles", s.Cycles, r.Cycles)
	line("lost frames", s.LostFrames, r.LostFrames)
	line("working counter errors", s.WKCErrors, r.WKCErrors)
	line("DC working counter err", s.DCWKCErrors, r.DCWKCErrors)
	fmt.Fprintln(w, "Answers discarded:")
	line("stale", s.StaleFrames, r.StaleFrames)
	line("invalid", s.InvalidFrames, r.InvalidFrames)
	line("foreign", s.ForeignFrames, r.ForeignFrames)
	line("mismatched", s.MismatchedAnswers, r.MismatchedAnswers)
	fmt.Fprintln(w, "Acyclic:")
	line("retries", s.Retries, r.Retries)
	line("extra frames", s.AcyclicFrames, r.AcyclicFrames)
	line("extra frames lost", s.AcyclicLost, r.AcyclicLost)
	fmt.Fprintln(w, "Mailbox:")
	line("emergencies", s.Emergencies, r.Emergencies)
	line("emergencies dropped", s.EmergenciesDropped, r.EmergenciesDropped)
	line("messages discarded", s.MailboxDiscarded, r.MailboxDiscarded)
	if rep.Interval > 0 {
		fmt.Fprintf(w, "(+N/s: growth per second over %.1f s)\n", rep.Interval)
	}
}

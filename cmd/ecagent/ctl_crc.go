package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

// crcReport is what `ecagent crc` prints: the counters of the last read
// and, after two reads, how much each grew per second between them.
type crcReport struct {
	// Interval is the time between the two reads in seconds; 0 for one read.
	Interval float64                 `json:"interval"`
	Counters maintenance.CRCResult   `json:"counters"`
	Rates    []maintenance.CRCResult `json:"rates,omitempty"`
}

func crcCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "crc", help{
		usage: "[--interval D] [--json]",
		about: "Print the error counters of every slave port (0x0300–0x0313): invalid frames (CRC), " +
			"physical RX errors, forwarded RX errors, lost links, and the processing unit and PDI " +
			"counters, like `ethercat crc`.",
		groups: ctlGroups("interval"),
		notes: "The counters are read twice, --interval apart, and the growth per second is printed " +
			"beside each (the counters saturate at 255; writing a register clears it). A port the " +
			"ESC does not have is left out. " + ctlNotes,
		examples: []string{
			"ecagent crc",
			"ecagent crc --interval 10s --iface eth1",
		},
	})
	interval := fs.Duration("interval", time.Second, "time between the two reads; 0 reads once")
	c := addCtlFlags(fs)
	if _, err := parseArgs(fs, args, 0, 0, "no arguments"); err != nil {
		return err
	}
	var first, second maintenance.CRCResult
	took, err := c.readTwice(ctx, e, "crc", maintenance.Request{Op: maintenance.OpCRC}, *interval, &first, &second)
	if err != nil {
		return err
	}
	first, second = c.crcSelected(first), c.crcSelected(second)
	rep := crcReport{Counters: first}
	if *interval > 0 {
		rep.Counters, rep.Interval = second, interval.Seconds()
		rep.Rates = []maintenance.CRCResult{crcRates(first, second, took)}
	}
	return c.print(e.stdout, &rep, func(w io.Writer) { printCRC(w, rep) })
}

// crcRates is how much each counter grew per second (rounded down)
// between two reads; a counter that went down (cleared) counts from 0.
func crcRates(a, b maintenance.CRCResult, d time.Duration) maintenance.CRCResult {
	rate := func(x, y uint8) uint8 {
		if y < x {
			x = 0
		}
		return uint8(float64(y-x) / d.Seconds())
	}
	out := maintenance.CRCResult{Slaves: make([]maintenance.SlaveCounters, 0, len(b.Slaves))}
	for i, s := range b.Slaves {
		if i >= len(a.Slaves) {
			break
		}
		p := a.Slaves[i]
		r := maintenance.SlaveCounters{Position: s.Position, Processing: rate(p.Processing, s.Processing), PDI: rate(p.PDI, s.PDI)}
		for k := range r.Ports {
			x, y := p.Ports[k], s.Ports[k]
			r.Ports[k] = maintenance.PortCounters{Kind: y.Kind, InvalidFrame: rate(x.InvalidFrame, y.InvalidFrame),
				RXError: rate(x.RXError, y.RXError), ForwardedRX: rate(x.ForwardedRX, y.ForwardedRX), LostLink: rate(x.LostLink, y.LostLink)}
		}
		out.Slaves = append(out.Slaves, r)
	}
	return out
}

// printCRC prints one line per port that exists.
func printCRC(w io.Writer, rep crcReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POS\tPORT\tINVALID\tRX-ERR\tFWD-RX\tLOST-LINK\tPU\tPDI")
	for i, s := range rep.Counters.Slaves {
		var r *maintenance.SlaveCounters
		if len(rep.Rates) > 0 && i < len(rep.Rates[0].Slaves) {
			r = &rep.Rates[0].Slaves[i]
		}
		cell := func(v uint8, rate func(maintenance.SlaveCounters) uint8) string {
			if r == nil {
				return fmt.Sprint(v)
			}
			return fmt.Sprintf("%d (+%d/s)", v, rate(*r))
		}
		first := true
		for p, c := range s.Ports {
			if c.Kind == "-" {
				continue
			}
			pu, pdi := "", ""
			if first {
				pu = cell(s.Processing, func(r maintenance.SlaveCounters) uint8 { return r.Processing })
				pdi = cell(s.PDI, func(r maintenance.SlaveCounters) uint8 { return r.PDI })
			}
			first = false
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Position, p,
				cell(c.InvalidFrame, func(r maintenance.SlaveCounters) uint8 { return r.Ports[p].InvalidFrame }),
				cell(c.RXError, func(r maintenance.SlaveCounters) uint8 { return r.Ports[p].RXError }),
				cell(c.ForwardedRX, func(r maintenance.SlaveCounters) uint8 { return r.Ports[p].ForwardedRX }),
				cell(c.LostLink, func(r maintenance.SlaveCounters) uint8 { return r.Ports[p].LostLink }), pu, pdi)
		}
	}
	_ = tw.Flush()
	if rep.Interval > 0 {
		fmt.Fprintf(w, "(+N/s: growth per second over %.1f s)\n", rep.Interval)
	}
}

// crcSelected keeps the counters of the slaves -p or -a selects.
func (c ctlFlags) crcSelected(r maintenance.CRCResult) maintenance.CRCResult {
	out := maintenance.CRCResult{Slaves: []maintenance.SlaveCounters{}}
	for _, s := range r.Slaves {
		if c.selected(s.Position) {
			out.Slaves = append(out.Slaves, s)
		}
	}
	return out
}

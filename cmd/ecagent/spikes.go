package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/sim"
)

// spikesCommand lists the running agent's latest explained spikes, from
// its /spikes.
func spikesCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "spikes", help{
		usage: "[--json] [-n N] [--config FILE] [--metrics.listen ADDR]",
		about: "List the running agent's latest late cycles, each with what delayed it: the tasks that ran on " +
			"the cycle's core (name, pid, policy and priority), interrupts, softirqs, kernel work, memory " +
			"management, RT throttling, the host — largest first, with their share of the delay.",
		groups: []flagGroup{
			{"Flags", []string{"json", "n"}},
			{"Configuration keys read", []string{config.FlagConfigFile, "metrics.listen"}},
		},
		notes: "It asks the agent at metrics.listen (/spikes; an address without a host is this host's). " +
			"The agent explains a cycle when it wakes later than forensics.threshold percent of the period " +
			"or overruns, from a tracefs instance on cycle.core; when forensics are off it says why.",
		examples: []string{"ecagent spikes", "ecagent spikes -n 50 --json"},
	})
	config.RegisterFlagsFor(fs, "metrics.listen")
	asJSON := fs.Bool("json", false, "print the spikes as JSON")
	n := fs.IntP("n", "n", 10, "how many spikes, latest first (1..256)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 256 {
		return fmt.Errorf("-n %d: want 1..256", *n)
	}
	cfg, err := loadConfig(ctx, config.Sources{Flags: fs, Environ: e.environ, Models: sim.Models()})
	if err != nil {
		return err
	}
	if cfg.Metrics.Listen == "" {
		return fmt.Errorf("metrics.listen is empty: the agent serves no endpoint to ask")
	}
	host, port, err := net.SplitHostPort(cfg.Metrics.Listen)
	if err != nil {
		return fmt.Errorf("metrics.listen %q: %w", cfg.Metrics.Listen, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, port) + "/spikes?n=" + strconv.Itoa(*n)
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("asking the agent (is it running, with metrics.listen %s?): %w", cfg.Metrics.Listen, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("reading the agent's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the agent at %s answered %s: %s", url, resp.Status, body)
	}
	var rep agent.SpikesReply
	if err := json.Unmarshal(body, &rep); err != nil {
		return fmt.Errorf("the agent's answer: %w", err)
	}
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeSpikes(e.stdout, &rep)
}

// writeSpikes prints the spikes as a table, one line per cause.
func writeSpikes(w io.Writer, rep *agent.SpikesReply) error {
	if rep.Forensics != "on" {
		fmt.Fprintf(w, "forensics off (%s): %s\n", rep.Forensics, rep.Why)
	}
	if len(rep.Spikes) == 0 {
		_, err := fmt.Fprintln(w, "no late cycles explained yet")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CYCLE\tLATE\tEXCESS\tCAUSE\tTIME\tSHARE\tCULPRIT")
	us := func(v float64) string { return time.Duration(v * 1e3).Round(time.Microsecond).String() }
	for _, sp := range rep.Spikes {
		late := us(sp.LateUS)
		if sp.Overrun {
			late += " overrun"
		}
		for i, c := range sp.Causes {
			if i == 0 {
				fmt.Fprintf(tw, "%d\t%s\t%s\t", sp.Cycle, late, us(sp.ExcessUS))
			} else {
				fmt.Fprint(tw, "\t\t\t")
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f%%\t%s\n", c.Class, us(c.TimeUS), c.Share*100, c.Name)
		}
	}
	return tw.Flush()
}

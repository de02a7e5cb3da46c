package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/bench"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/agent/spikes"
	"github.com/ecagent/ecagent/contract"
)

// explainer runs the spike forensics beside a bench run (ecagent bench
// --explain) and sums what delayed the cycle.
type explainer struct {
	col  *spikes.Collector
	done chan struct{}

	mu      sync.Mutex
	count   map[contract.SpikeClass]int
	time    map[contract.SpikeClass]time.Duration
	culprit map[string]*culpritSum
	spikes  int
	// long counts the spikes of a millisecond or more by their largest
	// cause.
	long map[contract.SpikeClass]int
}

type culpritSum struct {
	class  contract.SpikeClass
	name   string
	time   time.Duration
	spikes int
}

// startExplain starts the collector on cfg's cycle core and hooks it into
// opts.
func startExplain(ctx context.Context, cfg config.Config, log *slog.Logger, opts *bench.Options) (*explainer, error) {
	if cfg.Cycle.Core < 0 {
		return nil, fmt.Errorf("bench --explain: the cycle is not pinned (set cycle.core): there is no one core to trace")
	}
	fc := cfg.Forensics
	col, err := spikes.Start(ctx, spikes.Options{Root: fc.TraceFS, Instance: fc.Instance + "-bench", CPU: cfg.Cycle.Core,
		BufferKB: fc.BufferKB, Period: time.Duration(cfg.Cycle.Period), Threshold: float64(fc.Threshold) / 100, Log: log})
	if err != nil {
		return nil, fmt.Errorf("bench --explain: %w", err)
	}
	x := &explainer{col: col, done: make(chan struct{}), count: map[contract.SpikeClass]int{},
		time: map[contract.SpikeClass]time.Duration{}, culprit: map[string]*culpritSum{}, long: map[contract.SpikeClass]int{}}
	opts.Started = func(pid int) { col.SetCycle(pid, cfg.Cycle.Priority) }
	opts.Observe = col.Observe
	go x.sum()
	return x, nil
}

func (x *explainer) sum() {
	for {
		select {
		case <-x.done:
			return
		case sp := <-x.col.Spikes():
			x.mu.Lock()
			x.spikes++
			x.count[sp.Top()]++
			if sp.Late >= time.Millisecond {
				x.long[sp.Top()]++
			}
			for _, c := range sp.Causes {
				x.time[c.Class] += c.Time
				k := c.Class.String() + " " + c.Name
				if x.culprit[k] == nil {
					x.culprit[k] = &culpritSum{class: c.Class, name: c.Name}
				}
				x.culprit[k].time += c.Time
				x.culprit[k].spikes++
			}
			x.mu.Unlock()
		}
	}
}

// finish waits for the last spikes, stops the collector and prints what
// delayed the cycle: by class, the ten largest culprits, the last spikes.
func (x *explainer) finish(w io.Writer, threshold time.Duration) error {
	x.col.Settle()
	last := x.col.Last(10)
	close(x.done)
	err := x.col.Close()
	x.mu.Lock()
	defer x.mu.Unlock()
	fmt.Fprintf(w, "\nWhat delayed the cycle: %d cycles woke more than %v late or overran", x.spikes, threshold)
	if d := x.col.Dropped(); d > 0 {
		fmt.Fprintf(w, " (%d more not explained: forensics behind)", d)
	}
	fmt.Fprintln(w)
	if x.spikes == 0 {
		return err
	}
	var total time.Duration
	for _, t := range x.time {
		total += t
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CAUSE\tSPIKES (largest cause)\tOF THEM ≥ 1 ms\tTIME\tSHARE")
	for _, c := range contract.SpikeClasses() {
		if x.time[c] == 0 && x.count[c] == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%v\t%.0f%%\n", c, x.count[c], x.long[c], x.time[c].Round(time.Microsecond), 100*float64(x.time[c])/float64(total))
	}
	fmt.Fprintln(tw, "\nCULPRIT\tCAUSE\tTIME\tIN SPIKES")
	cs := make([]*culpritSum, 0, len(x.culprit))
	for _, c := range x.culprit {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].time > cs[j].time })
	for i, c := range cs {
		if i == 10 {
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%d\n", c.name, c.class, c.time.Round(time.Microsecond), c.spikes)
	}
	if e := tw.Flush(); e != nil {
		return e
	}
	rep := agent.SpikesReply{Forensics: "on"}
	for _, sp := range last {
		rep.Spikes = append(rep.Spikes, sp.View())
	}
	fmt.Fprintln(w, "\nThe last spikes:")
	return writeSpikes(w, &rep)
}

package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
)

// histogramBarWidth is the width of the longest bar of the text histogram.
const histogramBarWidth = 40

// WriteText prints the report for people: aligned sections, times in µs
// with one decimal (ns below 1 µs), the jitter distribution in 1-2-5
// steps away from the target and a log-scale text histogram of the
// wake-up latency.
func (r *Report) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	r.writeHeader(b)
	r.writeTimings(b)
	r.writeJitter(b)
	r.writeFaults(b)
	r.writeDistribution(b)
	r.writeHistogram(b)
	return b.Flush()
}

func (r *Report) writeHeader(b *bufio.Writer) {
	segment := fmt.Sprintf("the simulated segment in another process (%d slaves)", r.Slaves)
	if r.Interface != "" {
		segment = fmt.Sprintf("interface %s (%d slaves)", r.Interface, r.Slaves)
	}
	fmt.Fprintf(b, "ecagent bench: %s cycle against %s\n", us(float64(r.Target)), segment)
	if r.Interrupted {
		fmt.Fprintf(b, "INTERRUPTED after %d of %d cycles: the figures cover the cycles run\n", r.Cycles, r.Requested)
	}
	b.WriteString("\nRun\n")
	row := func(label, format string, args ...any) {
		fmt.Fprintf(b, "  %-22s"+format+"\n", append([]any{label}, args...)...)
	}
	row("target cycle", "%s", us(float64(r.Target)))
	row("cycles run", "%d of %d  (samples lost to ring drops: %d)", r.Cycles, r.Requested, r.RingDrops)
	row("duration", "%.3f s", r.Duration.Seconds())
	row("cycle thread", "%s", r.threadSettings())
	var applied, refused, off []string
	for _, s := range r.RT {
		switch {
		case !s.Requested:
			off = append(off, s.Setting)
		case s.Applied:
			applied = append(applied, s.Setting)
		default:
			refused = append(refused, s.Setting+" ("+s.Error+")")
		}
	}
	row("real-time applied", "%s", listOrNone(applied))
	row("real-time refused", "%s", listOrNone(refused))
	if len(off) > 0 {
		row("not requested", "%s", strings.Join(off, ", "))
	}
	if t := r.Telemetry; t != nil {
		row("telemetry", "Prometheus registry fed every 10 ms, /metrics on %s scraped every %v (scrapes: %d, failed: %d)",
			t.Address, t.ScrapeInterval, t.Scrapes, t.ScrapeErrors)
	} else {
		row("telemetry", "off")
	}
}

func (r *Report) threadSettings() string {
	var parts []string
	if r.Priority > 0 {
		parts = append(parts, fmt.Sprintf("SCHED_FIFO priority %d", r.Priority))
	} else {
		parts = append(parts, "normal scheduler")
	}
	if r.Core >= 0 {
		parts = append(parts, fmt.Sprintf("core %d", r.Core))
	} else {
		parts = append(parts, "any core")
	}
	if r.BusyWait > 0 {
		parts = append(parts, "busy-wait "+us(float64(r.BusyWait)))
	}
	return strings.Join(parts, ", ")
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func (r *Report) writeTimings(b *bufio.Writer) {
	fmt.Fprintf(b, "\n%-20s%12s%12s%12s%12s%12s%12s\n", "Timing", "min", "avg", "max", "stddev", "p99", "p99.9")
	for _, q := range []struct {
		name string
		f    *Figures
	}{
		{"cycle time", &r.CycleTime},
		{"wake-up latency", &r.WakeupLatency},
		{"job time", &r.JobTime},
		{"frame round trip", &r.FrameRTT},
	} {
		f := q.f
		if f.Count == 0 {
			fmt.Fprintf(b, "  %-18s%11s\n", q.name, "no values")
			continue
		}
		fmt.Fprintf(b, "  %-18s%12s%12s%12s%12s%12s%12s\n", q.name,
			us(float64(f.Min)), us(f.Avg), us(float64(f.Max)), us(f.StdDev), us(float64(f.P99)), us(float64(f.P999)))
	}
	if r.CycleTime.Sampled {
		fmt.Fprintf(b, "  (percentiles from a uniform sample of %d cycles; min, avg, max and stddev cover all)\n", MaxExactValues)
	}
	fmt.Fprintf(b, "  %-18s avg %.2f %%   max %.2f %%   (job time / target cycle)\n", "CPU load", r.CPULoadAvg, r.CPULoadMax)
	if r.CPULoadMax > 100 {
		// Not a load: one job outlasted its cycle, which is a stall.
		fmt.Fprintf(b, "  %-18s max: one cycle's job took %.1f target cycles, a stall (the host held the thread\n"+
			"  %-18s off its CPU, or the frame came back late), not a load the cycle can carry; see overruns\n",
			"", r.CPULoadMax/100, "")
	}
}

func (r *Report) writeJitter(b *bufio.Writer) {
	j := &r.Jitter
	b.WriteString("\nJitter (cycle time - target)\n")
	fmt.Fprintf(b, "  %-22s%s .. %s\n", "signed min .. max", signedUS(j.Min), signedUS(j.Max))
	fmt.Fprintf(b, "  %-22s%s\n", "|jitter| p99", us(float64(j.AbsP99)))
	fmt.Fprintf(b, "  %-22s%s\n", "|jitter| p99.9", us(float64(j.AbsP999)))
	fmt.Fprintf(b, "  %-22s%s\n", "|jitter| max", us(float64(j.AbsMax)))
	fmt.Fprintf(b, "  %-22s%s ± %s  (%d of %d cycles, %.2f %%)\n", fmt.Sprintf("%g %% of cycles in", 100*IntervalFraction),
		us(float64(r.Target)), us(float64(j.Interval.HalfWidth)), j.Interval.Count, r.CycleTime.Count, 100*j.Interval.Fraction)
}

func (r *Report) writeFaults(b *bufio.Writer) {
	b.WriteString("\nFaults\n")
	fmt.Fprintf(b, "  %-22s%d  (cycles in which a frame did not come back)\n", "lost frames", r.LostFrames)
	fmt.Fprintf(b, "  %-22s%d of %d sent (%.3f %%)\n", "frames lost", r.FramesLost, r.FramesSent,
		100*float64(r.FramesLost)/float64(max(r.FramesSent, 1)))
	wkc := fmt.Sprintf("%d", r.WKCMin)
	if r.WKCMax != r.WKCMin {
		wkc = fmt.Sprintf("%d..%d", r.WKCMin, r.WKCMax)
	}
	fmt.Fprintf(b, "  %-22s%d  (expected WKC %d, seen %s)\n", "WKC errors", r.WKCErrors, r.ExpectedWKC, wkc)
	fmt.Fprintf(b, "  %-22s%d\n", "overruns", r.Overruns)
	fmt.Fprintf(b, "  %-22s%d\n", "skipped deadlines", r.SkippedDeadlines)
	worst := ""
	if r.YieldLate > 0 {
		worst = "worst " + us(float64(r.YieldLateMax)) + " late: "
	}
	late := "  (" + worst + "the cycle's yield to the Go scheduler; the other late wake-ups are the host's)"
	fmt.Fprintf(b, "  %-22s%d%s\n", "late from own yield", r.YieldLate, late)
	if r.EarlyWakeups > 0 {
		fmt.Fprintf(b, "  %-22s%d  (woke before the deadline; counted as 0 µs in the histogram)\n", "early wake-ups", r.EarlyWakeups)
	}
}

func (r *Report) writeDistribution(b *bufio.Writer) {
	b.WriteString("\nJitter distribution (bin edges in 1-2-5 steps either side of the target)\n")
	fmt.Fprintf(b, "  %-27s  %-27s%10s%11s\n", "jitter", "cycle time", "cycles", "share")
	t := float64(r.Target)
	for _, bin := range r.Jitter.Bins {
		fmt.Fprintf(b, "  [%12s, %12s)  [%12s, %12s)%10d%9.2f %%\n",
			signedUS(int64(math.Round(bin.Lower-t))), signedUS(int64(math.Round(bin.Upper-t))),
			us(bin.Lower), us(bin.Upper), bin.Count, bin.Percent)
	}
}

// displayEdges are the upper edges, in µs, of the rows the text histogram
// collapses 1 µs bins into: 1 µs rows up to 10 µs, then 1-1.5-2-3-5-7
// steps per decade.
func displayEdges(upper int64) []int64 {
	var edges []int64
	for e := int64(1); e <= 10; e++ {
		edges = append(edges, e)
	}
	for dec := int64(10); edges[len(edges)-1] < upper; dec *= 10 {
		for _, m := range []int64{15, 20, 30, 50, 70, 100} {
			edges = append(edges, m*dec/10)
		}
	}
	for len(edges) > 0 && edges[len(edges)-1] > upper {
		edges = edges[:len(edges)-1]
	}
	if len(edges) == 0 || edges[len(edges)-1] < upper {
		edges = append(edges, upper)
	}
	return edges
}

// histogramRow is one row of the text histogram: [lo, hi) µs.
type histogramRow struct {
	lo, hi   int64 // µs; hi < 0 for the overflow row
	count    uint64
	overflow bool
}

func collapse(h *stats.LinearHistogram) []histogramRow {
	upper := int64(len(h.Bins))
	var rows []histogramRow
	lo := int64(0)
	for _, hi := range displayEdges(upper) {
		row := histogramRow{lo: lo, hi: hi}
		for k := lo; k < hi; k++ {
			row.count += h.Bins[k]
		}
		rows = append(rows, row)
		lo = hi
	}
	rows = append(rows, histogramRow{lo: upper, count: h.Overflow, overflow: true})
	first, last := -1, -1
	for i, row := range rows {
		if row.count > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return nil
	}
	return rows[first : last+1]
}

func (r *Report) writeHistogram(b *bufio.Writer) {
	h := r.WakeupHistogram
	if h == nil {
		return
	}
	b.WriteString("\nWake-up latency histogram (1 µs bins collapsed into rows; bars on a log scale)\n")
	rows := collapse(h)
	total := h.Total()
	var top uint64
	for _, row := range rows {
		top = max(top, row.count)
	}
	for _, row := range rows {
		from, to := strconv.FormatInt(row.lo, 10), ""
		switch {
		case row.overflow:
			from = ">= " + from
		case row.hi > row.lo+1:
			to = " - " + strconv.FormatInt(row.hi, 10)
		}
		label := fmt.Sprintf("%8s%-9s µs", from, to)
		bar := 0
		if row.count > 0 {
			bar = max(1, int(math.Round(histogramBarWidth*math.Log1p(float64(row.count))/math.Log1p(float64(top)))))
		}
		fmt.Fprintf(b, "  %s |%-*s %10d %8.3f %%\n", label, histogramBarWidth, strings.Repeat("#", bar),
			row.count, 100*float64(row.count)/float64(total))
	}
}

// us formats nanoseconds as µs with one decimal, or as whole ns below 1 µs.
func us(ns float64) string {
	if math.Abs(ns) < 1000 {
		return fmt.Sprintf("%.0f ns", ns)
	}
	return fmt.Sprintf("%.1f µs", ns/1000)
}

// signedUS is us with an explicit sign.
func signedUS(ns int64) string {
	if ns > 0 {
		return "+" + us(float64(ns))
	}
	if ns == 0 {
		return "0 ns"
	}
	return us(float64(ns))
}

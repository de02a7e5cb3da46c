package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ecagent/ecagent/metrics/stats"
)

// CyclictestPackage is the Debian package that provides cyclictest.
const CyclictestPackage = "rt-tests"

// The targets of the comparison: ecagent's wake-up latency p99 within
// 1.2× and p99.9 within 1.5× of cyclictest's in the same run.
const (
	TargetP99Ratio  = 1.2
	TargetP999Ratio = 1.5
)

// MissingCyclictestError says cyclictest is not installed.
type MissingCyclictestError struct {
	Binary string
	Err    error
}

func (e *MissingCyclictestError) Error() string {
	return fmt.Sprintf("%s not found (%v): --compare-cyclictest needs cyclictest from Debian's %s package (apt-get install %s)",
		e.Binary, e.Err, CyclictestPackage, CyclictestPackage)
}

func (e *MissingCyclictestError) Unwrap() error { return e.Err }

// Cyclictest is a cyclictest run comparable with a bench run: the same
// interval, priority, core and number of loops, one thread, locked memory
// (-m) and a 1 µs histogram (-h). cyclictest also holds
// /dev/cpu_dma_latency at 0, as the cycle process does.
type Cyclictest struct {
	// Binary is the cyclictest executable, looked up in PATH when it has
	// no slash; "" means "cyclictest".
	Binary string
	// Interval is the wake-up interval (cycle.period); whole microseconds.
	Interval time.Duration
	// Priority is the SCHED_FIFO priority (cycle.priority); 0 runs the
	// thread under the normal scheduler.
	Priority int
	// Core is the CPU to pin the thread to (cycle.core); -1 does not pin.
	Core int
	// Loops is the number of wake-ups (the bench's cycles).
	Loops uint64
	// HistogramMicros is cyclictest's -h: the histogram's range in µs.
	HistogramMicros int
}

func (c Cyclictest) binary() string {
	if c.Binary == "" {
		return "cyclictest"
	}
	return c.Binary
}

// Check reports, before anything runs, whether the comparison can run:
// cyclictest is installed (a *MissingCyclictestError otherwise) and the
// interval is whole microseconds, as cyclictest takes it.
func (c Cyclictest) Check() error {
	if _, err := exec.LookPath(c.binary()); err != nil {
		return &MissingCyclictestError{Binary: c.binary(), Err: err}
	}
	if c.Interval <= 0 || c.Interval%time.Microsecond != 0 {
		return fmt.Errorf("bench: cyclictest takes its interval in whole microseconds; cycle.period is %v", c.Interval)
	}
	if c.Loops == 0 || c.HistogramMicros < 1 {
		return fmt.Errorf("bench: cyclictest needs loops ≥ 1 and a histogram ≥ 1 µs (got %d, %d)", c.Loops, c.HistogramMicros)
	}
	return nil
}

// Args returns cyclictest's arguments writing its JSON report to jsonPath.
func (c Cyclictest) Args(jsonPath string) []string {
	args := []string{"-m", "-t1", "-q",
		"-i", strconv.FormatInt(int64(c.Interval/time.Microsecond), 10),
		"-l", strconv.FormatUint(c.Loops, 10),
		"-h", strconv.Itoa(c.HistogramMicros)}
	if c.Priority > 0 {
		args = append(args, "-p", strconv.Itoa(c.Priority))
	} else {
		args = append(args, "--policy=other")
	}
	if c.Core >= 0 {
		args = append(args, "-a", strconv.Itoa(c.Core))
	}
	return append(args, "--json="+jsonPath)
}

// Run runs cyclictest to the end and returns its parsed JSON report with
// the command line it ran. It takes about Loops × Interval. Cancelling
// ctx interrupts cyclictest.
func (c Cyclictest) Run(ctx context.Context) (*stats.CyclictestReport, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "ecagent-cyclictest-*.json")
	if err != nil {
		return nil, fmt.Errorf("bench: cyclictest report file: %w", err)
	}
	path := f.Name()
	_ = f.Close()
	defer os.Remove(path)

	cmd := exec.CommandContext(ctx, c.binary(), c.Args(path)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer // the histogram (-h) and summary go to stdout
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("bench: cyclictest interrupted: %w", ctx.Err())
		}
		return nil, fmt.Errorf("bench: %s: %w: %s", strings.Join(cmd.Args, " "), err, lastLines(out.String(), 5))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: cyclictest report: %w", err)
	}
	rep, err := stats.ParseCyclictestJSON(data)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if len(rep.Threads) != 1 {
		return nil, fmt.Errorf("bench: cyclictest reported %d threads, want 1", len(rep.Threads))
	}
	return rep, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// LatencyColumn is one side of the comparison: wake-up latency in whole
// microseconds, truncated as cyclictest records every sample.
type LatencyColumn struct {
	Cycles int64 `json:"cycles"`
	Min    int64 `json:"min_us"`
	// Avg is the mean of the truncated values, in µs.
	Avg  float64 `json:"avg_us"`
	Max  int64   `json:"max_us"`
	P99  int64   `json:"p99_us"`
	P999 int64   `json:"p99_9_us"`
	// PercentilesExact is false when a percentile lies beyond the
	// histogram (cyclictest's overflow): it is then a lower bound.
	PercentilesExact bool `json:"percentiles_exact"`
}

// Comparison sets ecagent's wake-up latency beside cyclictest's from the
// same invocation: same interval, priority, core and loops, run one after
// the other (never at the same time, so neither disturbs the other).
type Comparison struct {
	// Cmdline is the cyclictest command line that ran.
	Cmdline string `json:"cmdline"`
	// Ecagent and Cyclictest are the two columns.
	Ecagent    LatencyColumn `json:"ecagent"`
	Cyclictest LatencyColumn `json:"cyclictest"`
	// P99Ratio, P999Ratio and MaxRatio are ecagent / cyclictest; a
	// cyclictest figure of 0 µs counts as 1 µs (its resolution).
	P99Ratio  float64 `json:"p99_ratio"`
	P999Ratio float64 `json:"p99_9_ratio"`
	MaxRatio  float64 `json:"max_ratio"`
	// P99Met and P999Met say whether the ratios meet TargetP99Ratio and
	// TargetP999Ratio.
	P99Met  bool `json:"p99_target_met"`
	P999Met bool `json:"p99_9_target_met"`
	// BusyWait is cycle.busywait: with a busy-wait tail ecagent spins
	// before each deadline, which cyclictest does not.
	BusyWait time.Duration `json:"busywait_ns,omitempty"`
}

// ErrNoCyclictestThread is returned by Compare for a cyclictest report
// without a thread or without a histogram.
var ErrNoCyclictestThread = errors.New("bench: cyclictest report has no thread with a histogram")

// Compare builds the side-by-side of r's wake-up latency and cyclictest's
// report ct (its first thread, which needs a histogram: cyclictest -h).
// Both sides are compared in whole microseconds, truncated as cyclictest
// records them, so the ratios compare like with like.
func Compare(r *Report, ct *stats.CyclictestReport) (*Comparison, error) {
	if len(ct.Threads) == 0 || ct.Threads[0].Histogram == nil {
		return nil, ErrNoCyclictestThread
	}
	t := &ct.Threads[0]
	p99, ok99 := t.Percentile(0.99)
	p999, ok999 := t.Percentile(0.999)
	wl := &r.WakeupLatency
	c := &Comparison{
		Cmdline: ct.Cmdline,
		Ecagent: LatencyColumn{
			Cycles: wl.Count, Min: floorMicros(wl.Min), Avg: r.WakeupWholeMicrosAvg, Max: floorMicros(wl.Max),
			P99: floorMicros(wl.P99), P999: floorMicros(wl.P999), PercentilesExact: !wl.Sampled,
		},
		Cyclictest: LatencyColumn{
			Cycles: t.Cycles, Min: floorMicros(t.Min), Avg: t.Avg / 1000, Max: floorMicros(t.Max),
			P99: floorMicros(p99), P999: floorMicros(p999), PercentilesExact: ok99 && ok999,
		},
		BusyWait: r.BusyWait,
	}
	c.P99Ratio = ratio(c.Ecagent.P99, c.Cyclictest.P99)
	c.P999Ratio = ratio(c.Ecagent.P999, c.Cyclictest.P999)
	c.MaxRatio = ratio(c.Ecagent.Max, c.Cyclictest.Max)
	c.P99Met = c.P99Ratio <= TargetP99Ratio
	c.P999Met = c.P999Ratio <= TargetP999Ratio
	return c, nil
}

func floorMicros(ns int64) int64 {
	if ns < 0 {
		return 0
	}
	return ns / 1000
}

func ratio(a, b int64) float64 { return float64(a) / float64(max(b, 1)) }

// WriteText prints the comparison as a table with the ratios and whether
// the targets are met.
func (c *Comparison) WriteText(w io.Writer) error {
	var b strings.Builder
	b.WriteString("\nWake-up latency: ecagent vs cyclictest (same interval, priority, core and loops;\n")
	b.WriteString("run one after the other; whole µs, truncated as cyclictest records them)\n")
	fmt.Fprintf(&b, "  %-10s%12s%12s%9s   %s\n", "", "ecagent", "cyclictest", "ratio", "target")
	fmt.Fprintf(&b, "  %-10s%12d%12d\n", "cycles", c.Ecagent.Cycles, c.Cyclictest.Cycles)
	fmt.Fprintf(&b, "  %-10s%12d%12d\n", "min", c.Ecagent.Min, c.Cyclictest.Min)
	fmt.Fprintf(&b, "  %-10s%12.2f%12.2f\n", "avg", c.Ecagent.Avg, c.Cyclictest.Avg)
	fmt.Fprintf(&b, "  %-10s%12d%12d%9.2f\n", "max", c.Ecagent.Max, c.Cyclictest.Max, c.MaxRatio)
	bound := func(v int64, exact bool) string {
		if exact {
			return strconv.FormatInt(v, 10)
		}
		return ">=" + strconv.FormatInt(v, 10)
	}
	verdict := func(met bool) string {
		if met {
			return "met"
		}
		return "NOT met"
	}
	fmt.Fprintf(&b, "  %-10s%12s%12s%9.2f   <= %.1f  %s\n", "p99", bound(c.Ecagent.P99, c.Ecagent.PercentilesExact),
		bound(c.Cyclictest.P99, c.Cyclictest.PercentilesExact), c.P99Ratio, TargetP99Ratio, verdict(c.P99Met))
	fmt.Fprintf(&b, "  %-10s%12s%12s%9.2f   <= %.1f  %s\n", "p99.9", bound(c.Ecagent.P999, c.Ecagent.PercentilesExact),
		bound(c.Cyclictest.P999, c.Cyclictest.PercentilesExact), c.P999Ratio, TargetP999Ratio, verdict(c.P999Met))
	if !c.Cyclictest.PercentilesExact {
		b.WriteString("  (a cyclictest percentile lies beyond its histogram: raise --histogram-us)\n")
	}
	if c.BusyWait > 0 {
		fmt.Fprintf(&b, "  (ecagent spins the last %v before each deadline; cyclictest does not)\n", c.BusyWait)
	}
	fmt.Fprintf(&b, "  cyclictest: %s\n", c.Cmdline)
	_, err := io.WriteString(w, b.String())
	return err
}

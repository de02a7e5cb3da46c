package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
)

// CyclictestPackage is the Debian package that provides cyclictest.
const CyclictestPackage = "rt-tests"

// The targets of the comparison: ecagent's wake-up latency p99 within
// 1.2× and p99.9 within 1.5× of cyclictest's, over the union of each
// side's interleaved blocks.
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

func floorMicros(ns int64) int64 {
	if ns < 0 {
		return 0
	}
	return ns / 1000
}

func ratio(a, b int64) float64 { return float64(a) / float64(max(b, 1)) }

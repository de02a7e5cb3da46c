package metrics

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// userHZ is the unit of the CPU times in /proc/stat and /proc/PID/stat:
// USER_HZ, which the kernel fixes at 100 on every architecture it exports
// it to user space on.
const userHZ = 100

// minLoadInterval is the shortest interval the busy ratios are computed
// over: more frequent scrapes see the previous value, so that two
// Prometheus servers scraping the same agent do not turn the ratio into
// noise (one tick is 10 ms, 0.5 % of a second on two CPUs).
const minLoadInterval = time.Second

// Collector names, the collector label of ecagent_scrape_collector_success.
const (
	collectorHostCPU      = "host_cpu"
	collectorCycleProcess = "cycle_process"
)

// cpuTicks is the time of one CPU line of /proc/stat, in USER_HZ ticks.
type cpuTicks struct {
	busy, total uint64
}

// busyRatio returns the busy fraction between two readings, clamped to
// [0, 1], and false when no time elapsed between them or a counter went
// backwards.
func busyRatio(prev, cur cpuTicks) (float64, bool) {
	if cur.total <= prev.total || cur.busy < prev.busy {
		return 0, false
	}
	r := float64(cur.busy-prev.busy) / float64(cur.total-prev.total)
	return min(r, 1), true
}

// parseCPULine parses the times of one "cpu…" line of /proc/stat (the
// label already removed): user nice system idle iowait irq softirq steal
// (guest and guest_nice are part of user and nice and are ignored). Busy is
// everything but idle and iowait; steal counts as busy because the CPU was
// not available to the host's own work.
func parseCPULine(fields []string) (cpuTicks, error) {
	if len(fields) < 4 {
		return cpuTicks{}, fmt.Errorf("%d CPU time fields, want ≥ 4: %w", len(fields), ErrProcFormat)
	}
	var t cpuTicks
	for i, f := range fields[:min(len(fields), 8)] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuTicks{}, fmt.Errorf("CPU time field %d %q: %w", i+1, f, ErrProcFormat)
		}
		t.total += v
		if i != 3 && i != 4 { // idle, iowait
			t.busy += v
		}
	}
	return t, nil
}

// parseProcStat returns the aggregate CPU line of a /proc/stat text and, if
// core ≥ 0, the line of that CPU.
func parseProcStat(text string, core int) (all, coreTicks cpuTicks, err error) {
	want := ""
	if core >= 0 {
		want = "cpu" + strconv.Itoa(core)
	}
	foundAll, foundCore := false, core < 0
	for line := range strings.Lines(text) {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], "cpu") {
			continue
		}
		switch fields[0] {
		case "cpu":
			if all, err = parseCPULine(fields[1:]); err != nil {
				return cpuTicks{}, cpuTicks{}, fmt.Errorf("line cpu: %w", err)
			}
			foundAll = true
		case want:
			if coreTicks, err = parseCPULine(fields[1:]); err != nil {
				return cpuTicks{}, cpuTicks{}, fmt.Errorf("line %s: %w", want, err)
			}
			foundCore = true
		}
	}
	if !foundAll {
		return cpuTicks{}, cpuTicks{}, fmt.Errorf("no aggregate cpu line: %w", ErrProcFormat)
	}
	if !foundCore {
		return cpuTicks{}, cpuTicks{}, fmt.Errorf("no line for CPU %d: %w", core, ErrProcFormat)
	}
	return all, coreTicks, nil
}

// parseProcessStat returns the CPU time (utime + stime, fields 14 and 15)
// of a /proc/PID/stat text in USER_HZ ticks. The command name (field 2)
// may hold spaces and parentheses, so fields are counted from the last ')'.
func parseProcessStat(text string) (uint64, error) {
	end := strings.LastIndexByte(text, ')')
	if end < 0 {
		return 0, fmt.Errorf("no command name in parentheses: %w", ErrProcFormat)
	}
	fields := strings.Fields(text[end+1:]) // fields[0] is field 3, the state
	const utime, stime = 14 - 3, 15 - 3
	if len(fields) <= stime {
		return 0, fmt.Errorf("%d fields after the command name, want > %d: %w", len(fields), stime, ErrProcFormat)
	}
	var sum uint64
	for _, i := range []int{utime, stime} {
		v, err := strconv.ParseUint(fields[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("field %d %q: %w", i+3, fields[i], ErrProcFormat)
		}
		sum += v
	}
	return sum, nil
}

// hostCollector exports the busy fraction of the host and of the cycle's
// CPU from /proc/stat, and the cycle process's CPU time from
// /proc/PID/stat, each with a success gauge.
type hostCollector struct {
	procRoot string
	core     int          // −1: the cycle is not pinned
	pid      atomic.Int64 // cycle process, 0 when none runs
	now      func() time.Time

	hostBusy, coreBusy, processCPU, success *prometheus.Desc

	mu                sync.Mutex
	prevAll, prevCore cpuTicks // the reading the next ratio starts from
	havePrev          bool
	hostRatio         float64
	coreRatio         float64
	haveHost          bool
	haveCore          bool
	lastReadAt        time.Time
	lastReadOK        bool
}

// newHostCollector returns a collector reading below procRoot. It takes a
// first reading of /proc/stat right away, so the first scrape already has
// an interval to compute the busy fractions over.
func newHostCollector(catalog []Series, procRoot string, core int) *hostCollector {
	c := &hostCollector{
		procRoot:   procRoot,
		core:       max(core, -1),
		now:        time.Now,
		hostBusy:   prometheus.NewDesc(nameHostBusy, helpOf(catalog, nameHostBusy), nil, nil),
		coreBusy:   prometheus.NewDesc(nameCoreBusy, helpOf(catalog, nameCoreBusy), nil, nil),
		processCPU: prometheus.NewDesc(nameProcessCPU, helpOf(catalog, nameProcessCPU), nil, nil),
		success:    prometheus.NewDesc(nameCollectorOK, helpOf(catalog, nameCollectorOK), []string{labelColl}, nil),
	}
	c.mu.Lock()
	c.updateLoad(c.now())
	c.mu.Unlock()
	return c
}

func (c *hostCollector) setPID(pid int) { c.pid.Store(int64(max(pid, 0))) }

// Describe implements prometheus.Collector.
func (c *hostCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.hostBusy
	ch <- c.coreBusy
	ch <- c.processCPU
	ch <- c.success
}

// Collect implements prometheus.Collector.
func (c *hostCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	ok := c.updateLoad(c.now())
	hostRatio, haveHost := c.hostRatio, c.haveHost
	coreRatio, haveCore := c.coreRatio, c.haveCore
	c.mu.Unlock()

	ch <- prometheus.MustNewConstMetric(c.success, prometheus.GaugeValue, boolValue(ok), collectorHostCPU)
	if haveHost {
		ch <- prometheus.MustNewConstMetric(c.hostBusy, prometheus.GaugeValue, hostRatio)
	}
	if haveCore && c.core >= 0 {
		ch <- prometheus.MustNewConstMetric(c.coreBusy, prometheus.GaugeValue, coreRatio)
	}

	if pid := c.pid.Load(); pid > 0 {
		ticks, err := c.readProcessCPU(pid)
		ch <- prometheus.MustNewConstMetric(c.success, prometheus.GaugeValue, boolValue(err == nil), collectorCycleProcess)
		if err == nil {
			ch <- prometheus.MustNewConstMetric(c.processCPU, prometheus.CounterValue, float64(ticks)/userHZ)
		}
	}
}

// updateLoad reads /proc/stat unless the last reading is younger than
// minLoadInterval and updates the busy ratios when time has advanced. It
// reports whether /proc/stat could be read. c.mu must be held.
func (c *hostCollector) updateLoad(now time.Time) bool {
	if c.haveHost && c.lastReadOK && now.Sub(c.lastReadAt) < minLoadInterval {
		return true
	}
	all, core, err := c.readProcStat()
	c.lastReadAt, c.lastReadOK = now, err == nil
	if err != nil {
		return false
	}
	if !c.havePrev {
		c.prevAll, c.prevCore, c.havePrev = all, core, true
		return true
	}
	r, ok := busyRatio(c.prevAll, all)
	if !ok {
		if all.total < c.prevAll.total { // counters went back: start over
			c.prevAll, c.prevCore = all, core
		}
		return true
	}
	c.hostRatio, c.haveHost = r, true
	if r, ok := busyRatio(c.prevCore, core); ok {
		c.coreRatio, c.haveCore = r, true
	}
	c.prevAll, c.prevCore = all, core
	return true
}

func (c *hostCollector) readProcStat() (all, core cpuTicks, err error) {
	path := filepath.Join(c.procRoot, "stat")
	b, err := os.ReadFile(path)
	if err != nil {
		return cpuTicks{}, cpuTicks{}, fmt.Errorf("metrics: reading host CPU times: %w", err)
	}
	all, core, err = parseProcStat(string(b), c.core)
	if err != nil {
		return cpuTicks{}, cpuTicks{}, fmt.Errorf("metrics: %s: %w", path, err)
	}
	return all, core, nil
}

func (c *hostCollector) readProcessCPU(pid int64) (uint64, error) {
	path := filepath.Join(c.procRoot, strconv.FormatInt(pid, 10), "stat")
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("metrics: reading cycle process CPU time: %w", err)
	}
	ticks, err := parseProcessStat(string(b))
	if err != nil {
		return 0, fmt.Errorf("metrics: %s: %w", path, err)
	}
	return ticks, nil
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

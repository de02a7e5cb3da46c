package test

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// costEnv, when set, runs TestSpikesCost (minutes long): the figures of
// the forensics' cost for docs/performance.md.
const costEnv = "ECAGENT_SPIKES_COST"

// costRun is one run's figures.
type costRun struct {
	on                 bool
	wakeP99, wakeMax   float64 // s, exact over the window
	cycleCPUPerCycle   float64 // s of the cycle process's CPU per cycle
	agentCPU, agentRSS float64 // s of the agent's CPU over the window, bytes
	spikes, cycles     float64
}

// measureCost runs the agent for one metrics window with forensics on or
// off (and the hog, when burstsPerSec > 0) and reads the closed window.
func measureCost(t *testing.T, on bool, burstsPerSec int, window time.Duration) costRun {
	t.Helper()
	tag := "cst"
	extra := []string{"--metrics.window", window.String(), "--forensics.enabled=" + strconv.FormatBool(on)}
	var a *agentProc
	var addr string
	if on {
		a, addr = startSpikeAgent(t, tag, extra...)
	} else {
		a, addr = startSpikeAgentOff(t, tag, extra...)
	}
	if burstsPerSec > 0 {
		startHog(t, 90, 300*time.Microsecond, time.Second/time.Duration(burstsPerSec), window+2*time.Second, "ecspikehog")
	}
	m0 := scrape(t, addr)
	start := time.Now()
	time.Sleep(window + time.Second) // the first whole window closes
	m := scrape(t, addr)
	get := func(name, stat string) float64 {
		f := m[name]
		if f == nil {
			return math.NaN()
		}
		sum := 0.0
		for _, s := range f.GetMetric() {
			match := stat == ""
			for _, l := range s.GetLabel() {
				if l.GetName() == "stat" && l.GetValue() == stat {
					match = true
				}
			}
			if match {
				sum += s.GetGauge().GetValue() + s.GetCounter().GetValue()
			}
		}
		return sum
	}
	first := func(name string) float64 {
		if ms := m0[name].GetMetric(); len(ms) > 0 {
			return ms[0].GetCounter().GetValue()
		}
		return math.NaN()
	}
	r := costRun{on: on, wakeP99: get("ecagent_wakeup_latency_window_seconds", "p99"),
		wakeMax: get("ecagent_wakeup_latency_window_seconds", "max"),
		cycles:  get("ecagent_cycles_total", ""), spikes: get("ecagent_cycle_spikes_total", ""),
		agentCPU: (get("process_cpu_seconds_total", "") - first("process_cpu_seconds_total")) / time.Since(start).Seconds(),
		agentRSS: get("process_resident_memory_bytes", "")}
	// Over the window only: bring-up's CPU is not the cycle's.
	r.cycleCPUPerCycle = (get("ecagent_cycle_process_cpu_seconds_total", "") - first("ecagent_cycle_process_cpu_seconds_total")) /
		(r.cycles - first("ecagent_cycles_total"))
	_ = a
	return r
}

// startSpikeAgentOff is startSpikeAgent for a run with forensics off.
func startSpikeAgentOff(t *testing.T, tag string, extra ...string) (*agentProc, string) {
	t.Helper()
	w := newWire(t, tag)
	startSim(t, w, "EK1100,EL2004,EL2004,EL1014,EL1014,EL4132,EK1110")
	addr := testsupport.FreeAddr(t)
	path := fmt.Sprintf("/dev/shm/ecagent-%s-%d.shm", tag, os.Getpid())
	a := startAgent(t, append([]string{"--bus.interface", w.MasterEnd, "--cycle.shm", path, "--status.interval", "0",
		"--metrics.listen", addr, "--cycle.core", strconv.Itoa(spikeCore), "--cycle.priority", "80"}, extra...)...)
	t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGTERM); _ = a.cmd.Wait() })
	a.waitLog(t, "cycle started", 30*time.Second)
	return a, addr
}

// TestSpikesCost measures what forensics cost the cycle (wake-up p99,
// CPU per cycle, forensics on vs off, interleaved runs in one sitting)
// and the agent (CPU and memory, with 10 spikes a second). It runs only
// with ECAGENT_SPIKES_COST set. Each run is a fresh agent, whose CPU per
// cycle alone varies by ±15 % on a shared VM; scripts/forensics-cost
// measures the trace's cost on one running agent instead.
func TestSpikesCost(t *testing.T) {
	if os.Getenv(costEnv) == "" {
		t.Skip("minutes long: set " + costEnv + "=1")
	}
	const pairs = 8
	window := 10 * time.Second
	var runs []costRun
	for i := 0; i < pairs; i++ {
		for _, on := range []bool{i%2 == 1, i%2 == 0} { // off first, then on first: no order favours one
			var r costRun
			t.Run(fmt.Sprintf("run%d-on=%v", len(runs), on), func(t *testing.T) { r = measureCost(t, on, 0, window) })
			runs = append(runs, r)
			t.Logf("forensics %-5v wake p99 %6.1f µs max %7.1f µs  cycle CPU %5.2f µs/cycle  agent CPU %.3f  RSS %.1f MiB  spikes %v of %v cycles",
				on, r.wakeP99*1e6, r.wakeMax*1e6, r.cycleCPUPerCycle*1e6, r.agentCPU, r.agentRSS/(1<<20), r.spikes, r.cycles)
		}
	}
	// Each pair's two runs are neighbours in time and share the host's
	// state, so the ratio within a pair is the figure; its median over
	// the pairs, with the quartiles and the extremes, is reported (the
	// ratio of the medians too).
	ratio := func(what string, f func(costRun) float64) {
		var pr, on, off []float64
		for i := 0; i+1 < len(runs); i += 2 {
			a, b := runs[i], runs[i+1]
			if !a.on {
				a, b = b, a
			}
			pr = append(pr, f(a)/f(b))
			on, off = append(on, f(a)), append(off, f(b))
		}
		sort.Float64s(pr)
		sort.Float64s(on)
		sort.Float64s(off)
		q := func(v []float64, p float64) float64 { return v[int(p*float64(len(v)-1)+0.5)] }
		t.Logf("%s on/off: median of the pairs' ratios %.3f (quartiles %.3f..%.3f, spread %.3f..%.3f); ratio of the medians %.3f",
			what, q(pr, 0.5), q(pr, 0.25), q(pr, 0.75), pr[0], pr[len(pr)-1], q(on, 0.5)/q(off, 0.5))
	}
	ratio("wake-up p99", func(r costRun) float64 { return r.wakeP99 })
	ratio("cycle CPU per cycle", func(r costRun) float64 { return r.cycleCPUPerCycle })
	for _, on := range []bool{false, true} {
		var r costRun
		t.Run(fmt.Sprintf("hog-on=%v", on), func(t *testing.T) { r = measureCost(t, on, 10, window) })
		t.Logf("10 bursts/s, forensics %-5v: agent CPU %.4f s/s, RSS %.1f MiB, spikes %v", on, r.agentCPU, r.agentRSS/(1<<20), r.spikes)
	}
}

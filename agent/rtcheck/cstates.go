package rtcheck

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// deepStateLatency is the exit latency in µs above which an idle state
// counts as deep: anything beyond POLL and C1 (C1E is about 10 µs, C6 about
// 100 µs).
const deepStateLatency = 2

func cstatesCheck() check {
	return check{id: "cstates", title: "Deep C-states disabled", run: checkCstates}
}

// idleState is one cpuidle state of one CPU.
type idleState struct {
	cpu      int
	index    int    // K in stateK
	name     string // e.g. "C6"
	latency  int64  // exit latency, µs
	disabled bool
}

// checkCstates passes when no CPU may enter an idle state with an exit
// latency above deepStateLatency: idle=poll on the command line, or every
// deep state disabled in /sys/devices/system/cpu/cpuN/cpuidle/stateK/disable
// (intel_idle.max_cstate= and processor.max_cstate= work by hiding those
// states, so sysfs tells their effect). All CPUs count, not only the cycle
// core: the package drops into deep states only when every core is idle.
func checkCstates(h *host) verdict {
	params, err := h.cmdline()
	if err == nil {
		if p, ok := params.lookup("idle"); ok && p.value == "poll" {
			return verdict{status: Pass, found: "idle=poll on the kernel command line: CPUs spin instead of sleeping"}
		}
	}
	cpus, err := h.cpuDirs()
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot list CPUs: %v", err)}
	}
	var deep []idleState
	states := 0
	for _, cpu := range cpus {
		cs, err := readIdleStates(h, cpu)
		if err != nil {
			return verdict{status: Warn, found: err.Error()}
		}
		states += len(cs)
		for _, s := range cs {
			if s.latency > deepStateLatency && !s.disabled {
				deep = append(deep, s)
			}
		}
	}
	limits := cstateParams(params)
	if states == 0 {
		return verdict{status: Skip, found: "no cpuidle states exposed: the CPUs idle with the architecture's default (HLT); deeper states are up to the firmware" + limits}
	}
	if len(deep) == 0 {
		return verdict{status: Pass, found: fmt.Sprintf("no idle state deeper than %d µs exit latency is enabled%s", deepStateLatency, limits)}
	}
	found := describeDeepStates(deep) + " enabled" + limits
	if exists(h.devPath("cpu_dma_latency")) {
		found += "; while running, ecagent holds /dev/cpu_dma_latency at 0, which keeps the idle governor out of them"
	}
	return verdict{
		status: Warn,
		found:  found,
		fix:    deepStatesFix(deep) + "  # at boot: " + cstateLimitParams + " on the kernel command line",
	}
}

// cstateLimitParams are the kernel parameters that keep deep C-states away
// from boot on.
const cstateLimitParams = "intel_idle.max_cstate=0 processor.max_cstate=1"

// cstateParams says which C-state parameters the command line carries.
func cstateParams(params kernelParams) string {
	var set []string
	for _, name := range []string{"intel_idle.max_cstate", "processor.max_cstate", "idle"} {
		if p, ok := params.lookup(name); ok {
			set = append(set, p.String())
		}
	}
	if len(set) == 0 {
		return ""
	}
	return " (command line: " + strings.Join(set, " ") + ")"
}

// readIdleStates reads the cpuidle states of one CPU; a CPU without a
// cpuidle directory has none.
func readIdleStates(h *host, cpu int) ([]idleState, error) {
	dir := h.cpuPath("cpu"+strconv.Itoa(cpu), "cpuidle")
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot list idle states of cpu %d: %w", cpu, err)
	}
	var states []idleState
	for _, e := range entries {
		k, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "state"))
		if !strings.HasPrefix(e.Name(), "state") || err != nil {
			continue
		}
		s := idleState{cpu: cpu, index: k}
		s.name, _ = readTrimmed(h.cpuPath("cpu"+strconv.Itoa(cpu), "cpuidle", e.Name(), "name"))
		if s.latency, err = readInt(h.cpuPath("cpu"+strconv.Itoa(cpu), "cpuidle", e.Name(), "latency")); err != nil {
			return nil, fmt.Errorf("idle state %s of cpu %d: %w", e.Name(), cpu, err)
		}
		disable, err := readTrimmed(h.cpuPath("cpu"+strconv.Itoa(cpu), "cpuidle", e.Name(), "disable"))
		s.disabled = err == nil && disable == "1"
		states = append(states, s)
	}
	return states, nil
}

// describeDeepStates groups enabled deep states by name: "C6 (133 µs) on
// cpu 0-3, C1E (10 µs) on cpu 0-3".
func describeDeepStates(deep []idleState) string {
	type group struct {
		latency int64
		cpus    cpuSet
	}
	groups := map[string]*group{}
	var names []string
	for _, s := range deep {
		key := s.name
		if key == "" {
			key = "state" + strconv.Itoa(s.index)
		}
		g, ok := groups[key]
		if !ok {
			g = &group{latency: s.latency}
			groups[key] = g
			names = append(names, key)
		}
		g.cpus.add(s.cpu)
	}
	slices.SortFunc(names, func(a, b string) int { return int(groups[a].latency - groups[b].latency) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s (%d µs) on cpu %s", n, groups[n].latency, groups[n].cpus)
	}
	return strings.Join(parts, ", ")
}

// deepStatesFix disables the deep states now: their disable files, by path
// when few, else by a glob per state index.
func deepStatesFix(deep []idleState) string {
	var paths []string
	if len(deep) <= 4 {
		for _, s := range deep {
			paths = append(paths, fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpuidle/state%d/disable", s.cpu, s.index))
		}
	} else {
		var indexes []int
		for _, s := range deep {
			if !slices.Contains(indexes, s.index) {
				indexes = append(indexes, s.index)
			}
		}
		slices.Sort(indexes)
		for _, k := range indexes {
			paths = append(paths, fmt.Sprintf("/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state%d/disable", k))
		}
	}
	return "echo 1 | sudo tee " + strings.Join(paths, " ")
}

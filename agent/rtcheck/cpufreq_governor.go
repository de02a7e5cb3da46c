package rtcheck

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

func cpufreqGovernorCheck() check {
	return check{id: "cpufreq_governor", title: "CPU frequency pinned at maximum (cpufreq governor)", run: checkCpufreqGovernor}
}

// checkCpufreqGovernor looks at the cycle core, or at every CPU when none is
// configured: each must run the performance governor, or have its minimum
// frequency raised to the hardware maximum. CPUs without cpufreq (typical in
// VMs, where the hypervisor sets the frequency) are skipped.
func checkCpufreqGovernor(h *host) verdict {
	if h.core >= 0 {
		if v, stop := h.coreProblem(); stop {
			return v
		}
	}
	cpus, err := h.targetCPUs()
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot list CPUs: %v", err)}
	}
	byGovernor := map[string]cpuSet{}
	var pinned, slow cpuSet
	seen := 0
	for _, cpu := range cpus {
		dir := "cpu" + strconv.Itoa(cpu)
		governor, err := readTrimmed(h.cpuPath(dir, "cpufreq", "scaling_governor"))
		if err != nil {
			continue
		}
		seen++
		if governor == "performance" {
			pinned.add(cpu)
			continue
		}
		if minFreqAtMax(h, dir) {
			pinned.add(cpu)
			continue
		}
		set := byGovernor[governor]
		set.add(cpu)
		byGovernor[governor] = set
		slow.add(cpu)
	}
	if seen == 0 {
		return verdict{status: Skip, found: fmt.Sprintf("no cpufreq on cpu %s (usual in a VM: the hypervisor or firmware sets the frequency)", cpuSetOf(cpus))}
	}
	if slow.empty() {
		return verdict{status: Pass, found: fmt.Sprintf("full frequency on cpu %s (performance governor, or minimum raised to maximum)", pinned)}
	}
	governors := make([]string, 0, len(byGovernor))
	for g, set := range byGovernor {
		governors = append(governors, fmt.Sprintf("governor %s on cpu %s", g, set))
	}
	slices.Sort(governors)
	return verdict{
		status: Warn,
		found:  strings.Join(governors, "; ") + ": the frequency ramps up only after the cycle starts working",
		fix:    "echo performance | sudo tee " + cpuFiles(slow, "cpufreq/scaling_governor"),
	}
}

// minFreqAtMax reports whether a CPU's scaling_min_freq has been raised to
// its cpuinfo_max_freq.
func minFreqAtMax(h *host, dir string) bool {
	minFreq, err := readInt(h.cpuPath(dir, "cpufreq", "scaling_min_freq"))
	if err != nil {
		return false
	}
	maxFreq, err := readInt(h.cpuPath(dir, "cpufreq", "cpuinfo_max_freq"))
	return err == nil && maxFreq > 0 && minFreq >= maxFreq
}

func cpuSetOf(cpus []int) cpuSet {
	var s cpuSet
	for _, c := range cpus {
		s.add(c)
	}
	return s
}

// cpuFiles names a file below each CPU's sysfs directory, for a tee command:
// one path per CPU, or a glob when that would be long.
func cpuFiles(cpus cpuSet, file string) string {
	list := cpus.list()
	if len(list) > 4 {
		return "/sys/devices/system/cpu/cpu[0-9]*/" + file
	}
	paths := make([]string, len(list))
	for i, c := range list {
		paths[i] = fmt.Sprintf("/sys/devices/system/cpu/cpu%d/%s", c, file)
	}
	return strings.Join(paths, " ")
}

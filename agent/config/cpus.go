package config

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// onlineCPUsFile lists the host's online CPUs in the kernel's list format.
const onlineCPUsFile = "/sys/devices/system/cpu/online"

// cpuSet is a set of CPU numbers together with its kernel list text.
type cpuSet struct {
	cpus map[int]bool
	text string // e.g. "0-3,6"
}

// contains reports whether cpu is in the set.
func (s cpuSet) contains(cpu int) bool { return s.cpus[cpu] }

// hostCPUs returns the CPUs cycle.core may name: the host's online CPUs.
//
// runtime.NumCPU is not the bound: it counts this process's affinity mask,
// and with isolcpus= the isolated cores (exactly the ones the cycle should be
// pinned to) are left out of that mask, yet pinning to them is allowed. It is
// only the fallback when /sys cannot be read.
func hostCPUs() cpuSet {
	if data, err := os.ReadFile(onlineCPUsFile); err == nil {
		if set, err := parseCPUList(string(data)); err == nil && len(set.cpus) > 0 {
			return set
		}
	}
	n := runtime.NumCPU()
	set := cpuSet{cpus: make(map[int]bool, n), text: fmt.Sprintf("0-%d", n-1)}
	if n == 1 {
		set.text = "0"
	}
	for i := range n {
		set.cpus[i] = true
	}
	return set
}

// get returns s: a fixed set where a reader of the host's is expected.
func (s cpuSet) get() cpuSet { return s }

// parseCPUList parses the kernel's CPU list format ("0-3,6,8-9").
func parseCPUList(text string) (cpuSet, error) {
	text = strings.TrimSpace(text)
	set := cpuSet{cpus: map[int]bool{}, text: text}
	if text == "" {
		return set, nil
	}
	for part := range strings.SplitSeq(text, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			return cpuSet{}, fmt.Errorf("cpu list %q: bad entry %q", text, part)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return cpuSet{}, fmt.Errorf("cpu list %q: bad range %q", text, part)
			}
		}
		for cpu := first; cpu <= last; cpu++ {
			set.cpus[cpu] = true
		}
	}
	return set, nil
}

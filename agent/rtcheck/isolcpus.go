package rtcheck

import (
	"fmt"
	"strings"
)

func isolcpusCheck() check {
	return check{id: "isolcpus", title: "Cycle core isolated from the scheduler (isolcpus)", run: checkIsolcpus}
}

// checkIsolcpus passes when isolcpus= on the kernel command line takes the
// cycle core out of scheduler load balancing; where the kernel publishes
// what it isolated (/sys/devices/system/cpu/isolated), that is believed
// over the command line.
func checkIsolcpus(h *host) verdict {
	if v, stop := h.coreProblem(); stop {
		return v
	}
	params, err := h.cmdline()
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read the kernel command line: %v", err)}
	}
	var iso isolation
	param, present := params.lookup("isolcpus")
	if present {
		if iso, err = parseIsolcpus(param.value, h.lastCPU()); err != nil {
			return verdict{status: Fail, found: fmt.Sprintf("%v (the kernel ignores it)", err), fix: isolcpusFix(h.core, isolation{})}
		}
	}
	covered := present && iso.domain() && iso.cpus.has(h.core)
	if s, err := readTrimmed(h.cpuPath("isolated")); err == nil {
		if effective, err := parseCPUList(s, -1); err == nil {
			switch {
			case effective.has(h.core):
				return verdict{status: Pass, found: fmt.Sprintf("the kernel isolated cpus %s, cycle core %d among them (%s)", effective, h.core, describeParam(param, present))}
			case covered:
				return verdict{status: Fail, found: fmt.Sprintf("%s names cycle core %d but the kernel isolated only cpus %s", param, h.core, effective),
					fix: isolcpusFix(h.core, iso)}
			}
		}
	}
	switch {
	case covered:
		return verdict{status: Pass, found: fmt.Sprintf("%s covers cycle core %d", param, h.core)}
	case !present:
		return verdict{status: Fail, found: fmt.Sprintf("no isolcpus= on the kernel command line: cycle core %d is load-balanced like any other", h.core),
			fix: isolcpusFix(h.core, iso)}
	case !iso.domain():
		return verdict{status: Fail, found: fmt.Sprintf("%s lacks the domain flag: cycle core %d is still load-balanced", param, h.core),
			fix: isolcpusFix(h.core, iso)}
	}
	return verdict{status: Fail, found: fmt.Sprintf("%s does not cover cycle core %d", param, h.core), fix: isolcpusFix(h.core, iso)}
}

// describeParam names a command-line parameter for a report, or says it is
// absent.
func describeParam(p kernelParam, present bool) string {
	if !present {
		return "not on the kernel command line"
	}
	return p.String()
}

// isolcpusFix keeps the CPUs and flags already isolated and adds the cycle
// core, the domain flag and managed_irq (which keeps managed device
// interrupts off the core too).
func isolcpusFix(core int, iso isolation) string {
	flags := []string{"managed_irq", "domain"}
	for _, f := range iso.flags {
		if f != "managed_irq" && f != "domain" {
			flags = append(flags, f)
		}
	}
	cpus := iso.cpus.union(cpuOf(core))
	return grubFix("isolcpus=" + strings.Join(flags, ",") + "," + cpus.String())
}

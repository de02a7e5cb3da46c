package rtcheck

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

func schedFIFOCheck() check {
	return check{id: "sched_fifo", title: "SCHED_FIFO allowed", run: checkSchedFIFO}
}

// checkSchedFIFO decides whether this process may switch to SCHED_FIFO at
// the configured priority: it may with CAP_SYS_NICE (CapEff in
// /proc/self/status) or a soft RLIMIT_RTPRIO at least that priority
// (/proc/self/limits); a hard limit high enough is a warning (the process
// must raise its soft limit first). Whatever those say, a cgroup v1 cpu
// controller with cpu.rt_runtime_us 0 refuses SCHED_FIFO, even to root.
//
// It speaks for the process running the check: run the doctor as the user
// and under the unit that runs ecagent.
func checkSchedFIFO(h *host) verdict {
	if v, refused := h.cgroupRTRefused(); refused {
		return v
	}
	want := uint64(h.priority)
	held, rtprio, v, ok := h.capOrLimit(capSysNice, "Max realtime priority")
	switch {
	case !ok:
		return v
	case held:
		return verdict{status: Pass, found: "CAP_SYS_NICE is effective: any SCHED_FIFO priority is allowed"}
	}
	switch {
	case rtprio.soft >= want:
		return verdict{status: Pass, found: fmt.Sprintf("RLIMIT_RTPRIO %s allows SCHED_FIFO priority %d", formatLimit(rtprio.soft), want)}
	case rtprio.hard >= want:
		return verdict{status: Warn,
			found: fmt.Sprintf("soft RLIMIT_RTPRIO %s is below priority %d; the hard limit %s lets the process raise it first", formatLimit(rtprio.soft), want, formatLimit(rtprio.hard)),
			fix:   serviceDropIn("rtprio", "LimitRTPRIO="+strconv.FormatUint(want, 10))}
	}
	return verdict{
		status: Fail,
		found:  fmt.Sprintf("no CAP_SYS_NICE and RLIMIT_RTPRIO %s/%s (soft/hard): SCHED_FIFO priority %d is refused", formatLimit(rtprio.soft), formatLimit(rtprio.hard), want),
		fix:    serviceDropIn("rtprio", "LimitRTPRIO="+strconv.FormatUint(want, 10)) + `  # login shell: echo "$USER - rtprio 99" | sudo tee /etc/security/limits.d/99-ecagent.conf`,
	}
}

// cgroupRTRefused looks for the cpu.rt_runtime_us of this process's cgroup
// v1 cpu controller (or, in a container, at the top of /sys/fs/cgroup) and
// reports a failure when it is 0.
func (h *host) cgroupRTRefused() (verdict, bool) {
	var candidates []string
	if text, err := readFile(h.procPath("self", "cgroup")); err == nil {
		if entries, err := parseCgroups(text); err == nil {
			for _, e := range entries {
				if !slices.Contains(e.controllers, "cpu") {
					continue
				}
				for _, mount := range uniq(strings.Join(e.controllers, ","), "cpu", "cpu,cpuacct") {
					candidates = append(candidates, h.sysPath("fs", "cgroup", mount, path.Clean(e.path), "cpu.rt_runtime_us"))
				}
			}
		}
	}
	candidates = append(candidates, h.sysPath("fs", "cgroup", "cpu.rt_runtime_us"))
	for _, file := range candidates {
		runtime, err := readInt(file)
		if err != nil {
			continue
		}
		if runtime == 0 {
			return verdict{
				status: Fail,
				found:  fmt.Sprintf("%s is 0: the kernel refuses SCHED_FIFO in this cgroup, even to root", h.display(file)),
				fix:    fmt.Sprintf("echo 950000 | sudo tee %s  # its parents need the budget too; docker: --cpu-rt-runtime=950000", h.display(file)),
			}, true
		}
		return verdict{}, false
	}
	return verdict{}, false
}

func uniq(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

package rtcheck

import "fmt"

func nohzFullCheck() check {
	return check{id: "nohz_full", title: "No scheduler tick on the cycle core (nohz_full)", run: checkNohzFull}
}

// checkNohzFull passes when nohz_full= covers the cycle core. Kernels built
// with NO_HZ_FULL publish the CPUs actually running tickless in
// /sys/devices/system/cpu/nohz_full, which then decides; a kernel without
// that file ignores the parameter, so it warns.
func checkNohzFull(h *host) verdict {
	v := cpuListParamCheck(h, "nohz_full", "")
	if v.status != Pass {
		return v
	}
	s, err := readTrimmed(h.cpuPath("nohz_full"))
	if err != nil {
		if _, onlineErr := readFile(h.cpuPath("online")); onlineErr == nil {
			return verdict{status: Warn, found: v.found + ", but the kernel has no /sys/devices/system/cpu/nohz_full: built without NO_HZ_FULL, the parameter does nothing",
				fix: "# use a kernel built with CONFIG_NO_HZ_FULL=y (Debian's -rt kernels are)"}
		}
		return v
	}
	effective, err := parseCPUList(s, -1)
	if err != nil || !effective.has(h.core) {
		return verdict{status: Fail, found: fmt.Sprintf("%s, but the kernel runs tickless only on cpus %q", v.found, s),
			fix: "# the kernel refused the core (the boot CPU cannot be nohz_full): pin the cycle to another core"}
	}
	return v
}

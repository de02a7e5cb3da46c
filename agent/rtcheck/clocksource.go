package rtcheck

import (
	"fmt"
	"slices"
	"strings"
)

func clocksourceCheck() check {
	return check{id: "clocksource", title: "TSC clocksource", run: checkClocksource}
}

// checkClocksource passes when the kernel keeps time with the TSC; other
// clocksources (hpet, acpi_pm, kvm-clock on some hosts) cost a microsecond
// or more per clock read, and the cycle reads the clock several times.
func checkClocksource(h *host) verdict {
	dir := h.sysPath("devices", "system", "clocksource", "clocksource0")
	current, err := readTrimmed(dir + "/current_clocksource")
	if err != nil {
		return verdict{status: Skip, found: fmt.Sprintf("cannot read the clocksource: %v", err)}
	}
	if current == "tsc" {
		return verdict{status: Pass, found: "clocksource tsc"}
	}
	available, _ := readTrimmed(dir + "/available_clocksource")
	if slices.Contains(strings.Fields(available), "tsc") {
		return verdict{
			status: Warn,
			found:  fmt.Sprintf("clocksource %s (available: %s): each clock read costs more than with tsc", current, available),
			fix:    "echo tsc | sudo tee /sys/devices/system/clocksource/clocksource0/current_clocksource",
		}
	}
	return verdict{
		status: Warn,
		found:  fmt.Sprintf("clocksource %s; tsc is not available (available: %s): the kernel found it unstable, or the hypervisor hides it", current, available),
		fix:    "# only if the CPU has an invariant TSC (grep -w constant_tsc /proc/cpuinfo): add tsc=reliable clocksource=tsc to the kernel command line",
	}
}

package rtcheck

import (
	"fmt"
	"runtime"
	"strings"
)

func preemptRTCheck() check {
	return check{id: "preempt_rt", title: "PREEMPT_RT kernel", run: checkPreemptRT}
}

// checkPreemptRT passes when /sys/kernel/realtime is 1 or the kernel's
// version string names PREEMPT_RT.
func checkPreemptRT(h *host) verdict {
	release, _ := readTrimmed(h.procPath("sys", "kernel", "osrelease"))
	if release == "" {
		release = "kernel"
	}
	if s, err := readTrimmed(h.sysPath("kernel", "realtime")); err == nil && s == "1" {
		return verdict{status: Pass, found: fmt.Sprintf("%s: /sys/kernel/realtime is 1", release)}
	}
	version, err := readTrimmed(h.procPath("sys", "kernel", "version"))
	if err != nil {
		// /proc/version is "Linux version RELEASE (builder) #1 SMP ..."
		if version, err = readTrimmed(h.procPath("version")); err != nil {
			return verdict{status: Warn, found: fmt.Sprintf("cannot tell the kernel's preemption model: %v", err)}
		}
	}
	if isRTVersion(version) {
		return verdict{status: Pass, found: fmt.Sprintf("%s: %s", release, versionTail(version))}
	}
	return verdict{
		status: Fail,
		found:  fmt.Sprintf("%s is not a PREEMPT_RT kernel (%s)", release, versionTail(version)),
		fix:    fmt.Sprintf("sudo apt install linux-image-rt-%s && sudo reboot  # Debian; Ubuntu: sudo pro enable realtime-kernel", h.debianArch()),
	}
}

// debianArch names the host's architecture as Debian's packages do, from
// /proc/sys/kernel/arch (uname -m), else from the architecture this program
// was built for.
func (h *host) debianArch() string {
	machine, err := readTrimmed(h.procPath("sys", "kernel", "arch"))
	if err != nil {
		return runtime.GOARCH
	}
	switch machine {
	case "x86_64":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return machine
}

// isRTVersion reports whether a kernel version string (uname -v) names the
// fully preemptible model: "PREEMPT_RT", or "PREEMPT RT" in older RT
// kernels.
func isRTVersion(version string) bool {
	return strings.Contains(version, "PREEMPT_RT") || strings.Contains(version, "PREEMPT RT")
}

// versionTail keeps the "#1 SMP PREEMPT_DYNAMIC ..." part of a version
// string, dropping the build date that follows the model, so reports stay
// short and stable.
func versionTail(version string) string {
	if i := strings.Index(version, "#"); i >= 0 {
		version = version[i:]
	}
	fields := strings.Fields(version)
	var kept []string
	for _, f := range fields {
		if f != fields[0] && !isModelWord(f) {
			break
		}
		kept = append(kept, f)
	}
	return strings.Join(kept, " ")
}

func isModelWord(w string) bool {
	switch w {
	case "SMP", "PREEMPT", "PREEMPT_RT", "RT", "PREEMPT_DYNAMIC", "PREEMPTIRQ", "PREEMPT_LAZY", "PREEMPTLAZY":
		return true
	}
	return false
}

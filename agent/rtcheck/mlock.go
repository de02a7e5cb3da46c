package rtcheck

import "fmt"

// mlockFloor is the locked-memory limit below which mlockall of a Go
// process certainly fails: its binary, stacks and heap arenas already map
// more than this.
const mlockFloor = 1 << 30

func mlockCheck() check {
	return check{id: "mlock", title: "Memory locking (mlockall) allowed", run: checkMlock}
}

// checkMlock passes when this process may lock all its memory: CAP_IPC_LOCK
// is effective or the soft RLIMIT_MEMLOCK is unlimited. A finite limit of at
// least 1 GiB warns (mlockall fails once the process maps more), as does a
// hard limit that allows it but a soft one that does not; anything else
// fails.
func checkMlock(h *host) verdict {
	held, memlock, v, ok := h.capOrLimit(capIPCLock, "Max locked memory")
	switch {
	case !ok:
		return v
	case held:
		return verdict{status: Pass, found: "CAP_IPC_LOCK is effective: mlockall is not limited"}
	}
	fix := serviceDropIn("memlock", "LimitMEMLOCK=infinity") + `  # login shell: echo "$USER - memlock unlimited" | sudo tee /etc/security/limits.d/99-ecagent-memlock.conf`
	switch {
	case memlock.soft == unlimited:
		return verdict{status: Pass, found: "RLIMIT_MEMLOCK is unlimited"}
	case memlock.hard == unlimited:
		return verdict{status: Warn, found: fmt.Sprintf("soft RLIMIT_MEMLOCK %s; the hard limit is unlimited, so the process can raise it before mlockall", formatBytes(memlock.soft)), fix: fix}
	case memlock.soft >= mlockFloor:
		return verdict{status: Warn, found: fmt.Sprintf("RLIMIT_MEMLOCK %s: mlockall fails once ecagent maps more", formatBytes(memlock.soft)), fix: fix}
	}
	return verdict{
		status: Fail,
		found:  fmt.Sprintf("no CAP_IPC_LOCK and RLIMIT_MEMLOCK %s/%s (soft/hard): mlockall fails, page faults can stall the cycle", formatBytes(memlock.soft), formatBytes(memlock.hard)),
		fix:    fix,
	}
}

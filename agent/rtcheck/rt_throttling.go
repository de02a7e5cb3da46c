package rtcheck

import "fmt"

func rtThrottlingCheck() check {
	return check{id: "rt_throttling", title: "Real-time throttling off", run: checkRTThrottling}
}

// checkRTThrottling passes when sched_rt_runtime_us is -1 (or not below
// sched_rt_period_us): otherwise the kernel stops every real-time task for
// the rest of each period once they have used their share.
func checkRTThrottling(h *host) verdict {
	runtime, err := readInt(h.procPath("sys", "kernel", "sched_rt_runtime_us"))
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read sched_rt_runtime_us: %v", err)}
	}
	if runtime < 0 {
		return verdict{status: Pass, found: "sched_rt_runtime_us is -1: real-time tasks are never throttled"}
	}
	period, err := readInt(h.procPath("sys", "kernel", "sched_rt_period_us"))
	if err != nil || period <= 0 {
		return verdict{status: Warn, found: fmt.Sprintf("sched_rt_runtime_us is %d µs (period unreadable)", runtime),
			fix: rtThrottlingFix}
	}
	if runtime >= period {
		return verdict{status: Pass, found: fmt.Sprintf("sched_rt_runtime_us %d ≥ sched_rt_period_us %d: no throttling", runtime, period)}
	}
	return verdict{
		status: Warn,
		found: fmt.Sprintf("RT tasks limited to %d µs of every %d µs (%s %%): a cycle running when the budget ends waits up to %d µs",
			runtime, period, percent(runtime, period), period-runtime),
		fix: rtThrottlingFix,
	}
}

const rtThrottlingFix = "echo 'kernel.sched_rt_runtime_us = -1' | sudo tee /etc/sysctl.d/60-ecagent-rt.conf && sudo sysctl -p /etc/sysctl.d/60-ecagent-rt.conf"

// percent formats part/whole as a percentage with at most one decimal.
func percent(part, whole int64) string {
	tenths := part * 1000 / whole
	if tenths%10 == 0 {
		return fmt.Sprintf("%d", tenths/10)
	}
	return fmt.Sprintf("%d.%d", tenths/10, tenths%10)
}

package rtcheck

import (
	"context"
	"fmt"
)

// Status is the verdict of one check. The zero value is invalid: every
// [Result] that [Run] returns carries one of the named statuses. Its
// String is the lower-case name used in reports and JSON: "pass", "warn",
// "fail" or "skip" ("Status(N)" for others).
type Status int

//go:generate go tool stringer -type=Status -linecomment

// The verdicts. Their numeric order is not their severity: see [Worst].
const (
	// Pass means the host is tuned as the cycle needs.
	Pass Status = iota + 1 // pass
	// Warn means a setting costs latency or jitter but the cycle still runs.
	Warn // warn
	// Fail means a setting the cycle depends on is missing.
	Fail // fail
	// Skip means the check does not apply here (no interface configured, no
	// cpufreq in a VM, ...); Found says why.
	Skip // skip
)

// MarshalText encodes the status as its name, so JSON carries "fail" rather
// than a number.
func (s Status) MarshalText() ([]byte, error) {
	if !s.valid() {
		return nil, fmt.Errorf("rtcheck: cannot marshal invalid status %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText decodes a status name written by [Status.MarshalText].
func (s *Status) UnmarshalText(text []byte) error {
	for _, c := range []Status{Pass, Warn, Fail, Skip} {
		if string(text) == c.String() {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("rtcheck: unknown status %q", text)
}

func (s Status) valid() bool { return s >= Pass && s <= Skip }

// severity orders statuses for [Worst]: Skip < Pass < Warn < Fail.
func (s Status) severity() int {
	switch s {
	case Pass:
		return 1
	case Warn:
		return 2
	case Fail:
		return 3
	}
	return 0
}

// ExitCode maps the status to a command's exit code: 2 for Fail, 1 for Warn,
// 0 for Pass and Skip.
func (s Status) ExitCode() int {
	switch s {
	case Fail:
		return 2
	case Warn:
		return 1
	}
	return 0
}

// Result is the outcome of one check.
type Result struct {
	// ID is the check's stable snake_case identifier, e.g. "isolcpus".
	ID string `json:"id"`
	// Title says in a few words what the check looks at.
	Title string `json:"title"`
	// Status is the verdict.
	Status Status `json:"status"`
	// Found says what the check saw, e.g. "governor powersave on cpu 3"; it
	// is never empty.
	Found string `json:"found"`
	// Fix is the shell command that fixes a Warn or Fail, possibly followed
	// by a "# ..." comment; where no command can, it is only a comment saying
	// what to do. Empty for Pass and Skip.
	Fix string `json:"fix,omitempty"`
}

// Options says where to look and what the cycle will use. The zero value is
// not the default (its CycleCore is 0): start from [DefaultOptions].
type Options struct {
	// ProcRoot is where procfs is mounted; "" means "/proc".
	ProcRoot string
	// SysRoot is where sysfs is mounted; "" means "/sys".
	SysRoot string
	// DevRoot holds device nodes (cpu_dma_latency); "" means "/dev".
	DevRoot string
	// RunRoot holds daemons' runtime state (NetworkManager); "" means "/run".
	RunRoot string
	// CycleCore is the CPU the cycle thread is pinned to; negative means none
	// is dedicated, which the isolation and IRQ checks report as a warning.
	CycleCore int
	// Interface is the EtherCAT network interface; "" skips the NIC checks.
	Interface string
	// Priority is the SCHED_FIFO priority the cycle asks for; 0 or less means
	// any real-time priority will do.
	Priority int
	// NIC reads the interface's ethtool settings; nil uses the kernel's
	// ethtool ioctls ([EthtoolNIC]).
	NIC NICInfo
	// XDP asks what the NIC's driver can do with XDP; nil asks the
	// kernel's netdev netlink family ([NetlinkXDP]).
	XDP XDPProber
}

// DefaultOptions returns options for the real host with no cycle core and no
// interface configured.
func DefaultOptions() Options {
	return Options{
		ProcRoot:  "/proc",
		SysRoot:   "/sys",
		DevRoot:   "/dev",
		RunRoot:   "/run",
		CycleCore: -1,
	}
}

// verdict is what a check's body decides; Run adds the ID and title.
type verdict struct {
	status Status
	found  string
	fix    string
}

// check is one registered check.
type check struct {
	id    string
	title string
	run   func(h *host) verdict
}

// registry lists every check, in report order. It is the one place checks
// are registered; each check's constructor lives in its own file.
func registry() []check {
	return []check{
		preemptRTCheck(),
		isolcpusCheck(),
		nohzFullCheck(),
		rcuNocbsCheck(),
		cpufreqGovernorCheck(),
		cstatesCheck(),
		irqAffinityCheck(),
		clocksourceCheck(),
		rtThrottlingCheck(),
		schedFIFOCheck(),
		mlockCheck(),
		dmaLatencyCheck(),
		swapCheck(),
		nicLinkCheck(),
		nicCoalescingCheck(),
		nicOffloadsCheck(),
		nicRingsCheck(),
		nicXDPCheck(),
		nicNetworkManagerCheck(),
	}
}

// IDs returns the ID of every check in the order [Run] reports them.
func IDs() []string {
	checks := registry()
	ids := make([]string, len(checks))
	for i, c := range checks {
		ids[i] = c.id
	}
	return ids
}

// Run runs every check against the host opts describes and returns one
// result per check, in the order of [IDs]. Checks left when ctx is done are
// reported as Skip. Run keeps no state between calls and may be called
// concurrently.
func Run(ctx context.Context, opts Options) []Result {
	h := newHost(opts)
	checks := registry()
	results := make([]Result, 0, len(checks))
	for _, c := range checks {
		v := verdict{status: Skip}
		if err := ctx.Err(); err != nil {
			v.found = fmt.Sprintf("not run: %v", err)
		} else {
			v = c.run(h)
		}
		if !v.status.valid() || v.found == "" {
			// A check that forgets to say what it found is a bug; make it
			// visible rather than printing an empty line.
			v = verdict{status: Warn, found: fmt.Sprintf("internal error: check returned status %v with found %q", v.status, v.found)}
		}
		results = append(results, Result{ID: c.id, Title: c.title, Status: v.status, Found: v.found, Fix: v.fix})
	}
	return results
}

// Worst returns the most severe status among results (Fail, then Warn, then
// Pass); it returns Skip when every result is Skip or there are none. Its
// [Status.ExitCode] is the doctor command's exit code.
func Worst(results []Result) Status {
	worst := Skip
	for _, r := range results {
		if r.Status.severity() > worst.severity() {
			worst = r.Status
		}
	}
	return worst
}

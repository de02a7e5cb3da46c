package rtcheck

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Capability bits of /proc/PID/status Cap* masks (linux/capability.h).
const (
	capIPCLock = 14 // CAP_IPC_LOCK: lock any amount of memory
	capSysNice = 23 // CAP_SYS_NICE: real-time scheduling at any priority
)

// unlimited is how a limit of "unlimited" reads back from parseLimit.
const unlimited = math.MaxUint64

// limit is a resource limit's soft and hard value.
type limit struct {
	soft, hard uint64
}

// parseCapEff returns the effective capability mask from the text of
// /proc/PID/status ("CapEff:\t000001fffeffffff").
func parseCapEff(status string) (uint64, error) {
	for line := range strings.SplitSeq(status, "\n") {
		value, ok := strings.CutPrefix(line, "CapEff:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(value), 16, 64)
		if err != nil {
			return 0, fmt.Errorf("status: CapEff %q: %w", strings.TrimSpace(value), err)
		}
		return mask, nil
	}
	return 0, fmt.Errorf("status: no CapEff line")
}

func hasCap(mask uint64, capability uint) bool { return mask&(1<<capability) != 0 }

// parseLimit finds one limit in the text of /proc/PID/limits, whose lines
// are a name padded to a column, then the soft and hard values (a number or
// "unlimited") and a unit: "Max realtime priority     0     0".
func parseLimit(limits, name string) (limit, error) {
	for line := range strings.SplitSeq(limits, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return limit{}, fmt.Errorf("limits: short line %q", line)
		}
		soft, err := parseLimitValue(f[0])
		if err != nil {
			return limit{}, fmt.Errorf("limits: %s: %w", name, err)
		}
		hard, err := parseLimitValue(f[1])
		if err != nil {
			return limit{}, fmt.Errorf("limits: %s: %w", name, err)
		}
		return limit{soft: soft, hard: hard}, nil
	}
	return limit{}, fmt.Errorf("limits: no %q line", name)
}

func parseLimitValue(s string) (uint64, error) {
	if s == "unlimited" {
		return unlimited, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

// cgroupEntry is one line of /proc/PID/cgroup: "4:cpu,cpuacct:/system.slice".
type cgroupEntry struct {
	controllers []string // empty for the cgroup v2 line "0::/path"
	path        string
}

// parseCgroups parses /proc/PID/cgroup.
func parseCgroups(text string) ([]cgroupEntry, error) {
	var entries []cgroupEntry
	for line := range strings.SplitSeq(strings.TrimSpace(text), "\n") {
		if line == "" {
			continue
		}
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !strings.HasPrefix(parts[2], "/") {
			return nil, fmt.Errorf("cgroup: bad line %q", line)
		}
		e := cgroupEntry{path: parts[2]}
		if parts[1] != "" {
			e.controllers = strings.Split(parts[1], ",")
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// formatBytes formats a byte count with a binary unit.
func formatBytes(n uint64) string {
	if n == unlimited {
		return "unlimited"
	}
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// formatLimit formats a plain limit value.
func formatLimit(n uint64) string {
	if n == unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(n, 10)
}

// serviceDropIn is the command that adds settings to ecagent's systemd unit.
func serviceDropIn(name string, settings ...string) string {
	return fmt.Sprintf(`sudo mkdir -p /etc/systemd/system/ecagent.service.d && printf '[Service]\n%s\n' | sudo tee /etc/systemd/system/ecagent.service.d/%s.conf && sudo systemctl daemon-reload`,
		strings.Join(settings, `\n`), name)
}

// capOrLimit reads what lets this process do something: the capability
// capability among its effective ones (/proc/self/status) or, without it,
// its limit called name (/proc/self/limits). held reports the
// capability; a file that cannot be read or parsed gives the warning
// verdict to return instead, with ok false.
func (h *host) capOrLimit(capability uint, name string) (held bool, l limit, v verdict, ok bool) {
	status, err := readFile(h.procPath("self", "status"))
	if err != nil {
		return false, limit{}, verdict{status: Warn, found: fmt.Sprintf("cannot read /proc/self/status: %v", err)}, false
	}
	caps, err := parseCapEff(status)
	if err != nil {
		return false, limit{}, verdict{status: Warn, found: err.Error()}, false
	}
	if hasCap(caps, capability) {
		return true, limit{}, verdict{}, true
	}
	limits, err := readFile(h.procPath("self", "limits"))
	if err != nil {
		return false, limit{}, verdict{status: Warn, found: fmt.Sprintf("cannot read /proc/self/limits: %v", err)}, false
	}
	l, err = parseLimit(limits, name)
	if err != nil {
		return false, limit{}, verdict{status: Warn, found: err.Error()}, false
	}
	return false, l, verdict{}, true
}

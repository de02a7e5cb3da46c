package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
)

// ExtraKey is the top-level key under which JSON puts the full report
// beside the cyclictest-shaped part.
const ExtraKey = "ecagent"

// CyclictestReport returns the wake-up latency of the run as a one-thread
// cyclictest report (microsecond resolution, the 1 µs histogram), with sys
// as the measured host. Early wake-ups, if any, count as 0 µs, as the
// histogram counts them.
func (r *Report) CyclictestReport(sys stats.CyclictestSysinfo) *stats.CyclictestReport {
	s := stats.Summary{
		Count: r.WakeupLatency.Count,
		Min:   max(r.WakeupLatency.Min, 0),
		Max:   max(r.WakeupLatency.Max, 0),
		Mean:  r.WakeupLatency.Avg,
	}
	rc := 0
	if r.Interrupted {
		rc = 1
	}
	return &stats.CyclictestReport{
		FileVersion: 1,
		Cmdline:     r.Cmdline,
		Version:     r.Version,
		StartTime:   r.Start.Format(stats.CyclictestTimeLayout),
		EndTime:     r.End.Format(stats.CyclictestTimeLayout),
		ReturnCode:  rc,
		Sysinfo:     sys,
		Threads:     []stats.CyclictestThread{stats.NewCyclictestThread(0, s, r.WakeupHistogram, max(r.Core, 0), 0)},
	}
}

// JSON returns the machine-readable report: a cyclictest --json report of
// the wake-up latency (same keys, order and layout as cyclictest 2.40, one
// thread, 1 µs histogram; see CyclictestReport), so that plotting scripts
// written for cyclictest read it unchanged, plus the whole Report under
// the extra top-level key ExtraKey. Readers that look up cyclictest's keys
// ignore the extra one; stats.ParseCyclictestJSON reads the file as it
// reads cyclictest's.
func (r *Report) JSON(sys stats.CyclictestSysinfo) ([]byte, error) {
	ct, err := stats.CyclictestJSON(r.CyclictestReport(sys))
	if err != nil {
		return nil, fmt.Errorf("bench: JSON report: %w", err)
	}
	extra, err := json.MarshalIndent(r, "  ", "  ")
	if err != nil {
		return nil, fmt.Errorf("bench: JSON report: %w", err)
	}
	body := bytes.TrimRight(ct, " \n")
	if len(body) == 0 || body[len(body)-1] != '}' {
		return nil, fmt.Errorf("bench: JSON report: cyclictest part does not end in '}'")
	}
	body = bytes.TrimRight(body[:len(body)-1], " \n")
	var out bytes.Buffer
	out.Write(body)
	fmt.Fprintf(&out, ",\n  %q: ", ExtraKey)
	out.Write(extra)
	out.WriteString("\n}\n")
	return out.Bytes(), nil
}

// HostSysinfo returns the uname of this host and whether its kernel is
// PREEMPT_RT, as cyclictest's "sysinfo" records them.
func HostSysinfo() stats.CyclictestSysinfo {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return stats.CyclictestSysinfo{Sysname: "Linux"}
	}
	si := stats.CyclictestSysinfo{
		Sysname:  unix.ByteSliceToString(u.Sysname[:]),
		Nodename: unix.ByteSliceToString(u.Nodename[:]),
		Release:  unix.ByteSliceToString(u.Release[:]),
		Version:  unix.ByteSliceToString(u.Version[:]),
		Machine:  unix.ByteSliceToString(u.Machine[:]),
	}
	if b, err := os.ReadFile("/sys/kernel/realtime"); err == nil && strings.TrimSpace(string(b)) == "1" {
		si.Realtime = 1
	}
	return si
}

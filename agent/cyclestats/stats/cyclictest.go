package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/ecagent/ecagent/internal/jsonstr"
)

// CyclictestTimeLayout is the time layout of start_time and end_time in a
// cyclictest --json report ("Sun, 29 Nov 2026 19:56:27 +0000").
const CyclictestTimeLayout = time.RFC1123Z

// maxCyclictestBins bounds the histogram size ParseCyclictestJSON accepts, so a
// malformed file cannot make it allocate without limit.
const maxCyclictestBins = 1 << 24

// CyclictestReport is the content of a cyclictest (rt-tests 2.x) --json report.
// Thread figures are held in nanoseconds whatever resolution the file uses.
//
// The file format, as written by cyclictest 2.40:
//
//	{
//	  "file_version": 1,
//	  "cmdline:": "cyclictest …",          (the colon is part of the key)
//	  "rt_test_version:": "2.40",          (likewise)
//	  "start_time": "Sun, 29 Nov 2026 19:56:27 +0000",
//	  "end_time": "…",
//	  "return_code": 0,
//	  "sysinfo": {"sysname", "nodename", "release", "version", "machine": strings, "realtime": 0|1},
//	  "num_threads": 1,
//	  "resolution_in_ns": 0,               (0: values in µs, 1: values in ns)
//	  "thread": {"0": {"histogram": {"8": 1, "10": 2, …}, "cycles": 2000,
//	             "min": 8, "max": 149, "avg": 13.87, "cpu": 0, "node": 0}}
//	}
//
// The histogram lists only non-empty bins, keyed by the value in the file's
// unit (bin k counts samples of k whole units); it is empty when cyclictest ran
// without -h. The overflow count is not written: it is cycles minus the sum of
// the bins. cyclictest truncates every sample to whole units before computing
// min, max and avg, so its avg is about half a unit below the exact mean.
type CyclictestReport struct {
	// FileVersion is "file_version" (1 for rt-tests 2.x).
	FileVersion int
	// Cmdline is "cmdline:", the command line that produced the report.
	Cmdline string
	// Version is "rt_test_version:", the rt-tests version.
	Version string
	// StartTime and EndTime are "start_time" and "end_time" as written, in
	// CyclictestTimeLayout.
	StartTime, EndTime string
	// ReturnCode is "return_code".
	ReturnCode int
	// Sysinfo is "sysinfo", the uname of the measured host.
	Sysinfo CyclictestSysinfo
	// Nanoseconds is "resolution_in_ns": true when the file's values are in
	// nanoseconds (cyclictest -N), false when in microseconds.
	Nanoseconds bool
	// Threads are the entries of "thread", ordered by ID.
	Threads []CyclictestThread
}

// CyclictestSysinfo is the "sysinfo" object of a cyclictest report.
type CyclictestSysinfo struct {
	// Sysname, Nodename, Release, Version and Machine are the uname(2) fields
	// of the measured host.
	Sysname  string `json:"sysname"`
	Nodename string `json:"nodename"`
	Release  string `json:"release"`
	Version  string `json:"version"`
	Machine  string `json:"machine"`
	// Realtime is 1 when the kernel is PREEMPT_RT (/sys/kernel/realtime).
	Realtime int `json:"realtime"`
}

// CyclictestThread is one measuring thread of a cyclictest report, in
// nanoseconds.
type CyclictestThread struct {
	// ID is the thread's key in "thread" ("0", "1", …).
	ID int
	// Cycles is the number of measured cycles.
	Cycles int64
	// Min and Max are the extreme latencies in nanoseconds (as cyclictest
	// recorded them: truncated to its resolution).
	Min, Max int64
	// Avg is the mean latency in nanoseconds.
	Avg float64
	// CPU and Node are the CPU and NUMA node the thread ran on.
	CPU, Node int
	// Histogram holds the latency histogram with BinWidth equal to the file's
	// unit (1000 ns or 1 ns) and Origin 0; its Overflow is Cycles minus the
	// binned samples. A parsed histogram ends at the highest non-empty bin
	// (the file does not record cyclictest's -h size), so Upper() is then a
	// weaker overflow bound than -h was. It is nil when the report has no
	// histogram (cyclictest ran without -h, or every sample overflowed).
	Histogram *LinearHistogram
}

// NewCyclictestThread builds a report thread from a window summary and an
// optional histogram (nil for none) of the same samples, in nanoseconds. For
// a microsecond report the histogram must come from
// NewLinearHistogram(0, 1000, n); for a nanosecond report from
// NewLinearHistogram(0, 1, n). The summary's exact mean is used as avg.
func NewCyclictestThread(id int, s Summary, h *LinearHistogram, cpu, node int) CyclictestThread {
	return CyclictestThread{
		ID: id, Cycles: s.Count, Min: s.Min, Max: s.Max, Avg: s.Mean,
		CPU: cpu, Node: node, Histogram: h,
	}
}

// Percentile returns the nearest-rank q-quantile of the thread's latencies in
// nanoseconds, computed from its histogram. exact is true when the value is
// known at the report's resolution: the ranked sample lies in a histogram bin,
// or it is the largest sample (then the value is Max). When the ranked sample
// lies in the histogram's overflow the result is a lower bound (the upper edge
// of the histogram) and exact is false; without a histogram it is 0, false.
func (t *CyclictestThread) Percentile(q float64) (v int64, exact bool) {
	if t.Histogram == nil {
		return 0, false
	}
	if NearestRank(q, int64(t.Histogram.Total())) == t.Cycles && t.Cycles > 0 {
		return t.Max, true
	}
	return t.Histogram.Percentile(q)
}

// Unit returns the file's unit in nanoseconds: 1 for a nanosecond report, 1000
// for a microsecond one.
func (r *CyclictestReport) Unit() int64 {
	if r.Nanoseconds {
		return 1
	}
	return 1000
}

// ParseCyclictestJSON reads a cyclictest --json report. Errors wrap
// ErrCyclictestFormat.
func ParseCyclictestJSON(data []byte) (*CyclictestReport, error) {
	var f struct {
		FileVersion  *int                `json:"file_version"`
		CmdlineColon string              `json:"cmdline:"`
		Cmdline      string              `json:"cmdline"`
		VersionColon string              `json:"rt_test_version:"`
		Version      string              `json:"rt_test_version"`
		StartTime    string              `json:"start_time"`
		EndTime      string              `json:"end_time"`
		ReturnCode   int                 `json:"return_code"`
		Sysinfo      CyclictestSysinfo   `json:"sysinfo"`
		Resolution   int                 `json:"resolution_in_ns"`
		Thread       map[string]ctThread `json:"thread"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse cyclictest report: %w: %w", ErrCyclictestFormat, err)
	}
	if f.FileVersion == nil || f.Thread == nil {
		return nil, fmt.Errorf("parse cyclictest report: no \"file_version\" or \"thread\": %w", ErrCyclictestFormat)
	}
	if f.Resolution != 0 && f.Resolution != 1 {
		return nil, fmt.Errorf("parse cyclictest report: resolution_in_ns %d, want 0 or 1: %w", f.Resolution, ErrCyclictestFormat)
	}
	r := &CyclictestReport{
		FileVersion: *f.FileVersion,
		Cmdline:     firstNonEmpty(f.CmdlineColon, f.Cmdline),
		Version:     firstNonEmpty(f.VersionColon, f.Version),
		StartTime:   f.StartTime,
		EndTime:     f.EndTime,
		ReturnCode:  f.ReturnCode,
		Sysinfo:     f.Sysinfo,
		Nanoseconds: f.Resolution == 1,
	}
	unit := r.Unit()
	for key, ft := range f.Thread {
		id, err := strconv.Atoi(key)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("parse cyclictest report: thread key %q: %w", key, ErrCyclictestFormat)
		}
		t, err := ft.thread(id, unit)
		if err != nil {
			return nil, fmt.Errorf("parse cyclictest report: thread %d: %w", id, err)
		}
		r.Threads = append(r.Threads, t)
	}
	slices.SortFunc(r.Threads, func(a, b CyclictestThread) int { return a.ID - b.ID })
	return r, nil
}

// firstNonEmpty returns the first non-empty string (cyclictest writes some keys with a
// trailing colon; accept both spellings).
func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ctThread is one "thread" entry as it appears in the file.
type ctThread struct {
	Histogram map[string]uint64 `json:"histogram"`
	Cycles    int64             `json:"cycles"`
	Min       int64             `json:"min"`
	Max       int64             `json:"max"`
	Avg       float64           `json:"avg"`
	CPU       int               `json:"cpu"`
	Node      int               `json:"node"`
}

func (ft *ctThread) thread(id int, unit int64) (CyclictestThread, error) {
	if ft.Cycles < 0 {
		return CyclictestThread{}, fmt.Errorf("cycles %d: %w", ft.Cycles, ErrCyclictestFormat)
	}
	t := CyclictestThread{
		ID: id, Cycles: ft.Cycles,
		Min: ft.Min * unit, Max: ft.Max * unit, Avg: ft.Avg * float64(unit),
		CPU: ft.CPU, Node: ft.Node,
	}
	if len(ft.Histogram) == 0 {
		return t, nil
	}
	top := -1
	for key := range ft.Histogram {
		k, err := strconv.Atoi(key)
		if err != nil || k < 0 || k >= maxCyclictestBins {
			return CyclictestThread{}, fmt.Errorf("histogram key %q: %w", key, ErrCyclictestFormat)
		}
		top = max(top, k)
	}
	h := &LinearHistogram{BinWidth: unit, Bins: make([]uint64, top+1)}
	var binned uint64
	for key, c := range ft.Histogram {
		k, _ := strconv.Atoi(key) // validated above
		h.Bins[k] = c
		binned += c
	}
	if uint64(ft.Cycles) > binned {
		h.Overflow = uint64(ft.Cycles) - binned
	}
	t.Histogram = h
	return t, nil
}

// CyclictestJSON writes r in cyclictest's --json format (same keys, order and
// layout as cyclictest 2.40, two-space indentation, histogram keys in numeric
// order with empty bins left out), so scripts written for cyclictest output
// read it. Thread values are converted from nanoseconds to the report's unit
// (Min and Max rounded down, Avg to two decimals); num_threads is
// len(r.Threads). Each thread's histogram, if any, must have Origin 0,
// BinWidth equal to r.Unit() and no underflow; otherwise the error wraps
// ErrNotCyclictestCompatible. Thread IDs must be distinct and non-negative.
func CyclictestJSON(r *CyclictestReport) ([]byte, error) {
	unit := r.Unit()
	threads := slices.Clone(r.Threads)
	slices.SortFunc(threads, func(a, b CyclictestThread) int { return a.ID - b.ID })
	for i, t := range threads {
		if t.ID < 0 || (i > 0 && threads[i-1].ID == t.ID) {
			return nil, fmt.Errorf("cyclictest JSON: thread ID %d negative or repeated: %w", t.ID, ErrNotCyclictestCompatible)
		}
		if h := t.Histogram; h != nil && (h.Origin != 0 || h.BinWidth != unit || h.Underflow != 0) {
			return nil, fmt.Errorf("cyclictest JSON: thread %d histogram origin %d, bin width %d ns, underflow %d; want 0, %d ns, 0: %w",
				t.ID, h.Origin, h.BinWidth, h.Underflow, unit, ErrNotCyclictestCompatible)
		}
	}

	b := appendCyclictestHeader(nil, r, len(threads))
	b = append(b, `,"thread":{`...)
	for i, t := range threads {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendCyclictestThread(b, t, unit)
	}
	b = append(b, "}}"...)

	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		// Unreachable unless the writer above is wrong (e.g. a NaN avg).
		return nil, fmt.Errorf("cyclictest JSON: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// appendCyclictestHeader appends the opening brace and the keys before
// "thread" of r's cyclictest JSON, for n threads.
func appendCyclictestHeader(b []byte, r *CyclictestReport, n int) []byte {
	b = append(b, `{"file_version":`...)
	b = strconv.AppendInt(b, int64(r.FileVersion), 10)
	b = append(b, `,"cmdline:":`...)
	b = jsonstr.AppendPlain(b, r.Cmdline)
	b = append(b, `,"rt_test_version:":`...)
	b = jsonstr.AppendPlain(b, r.Version)
	b = append(b, `,"start_time":`...)
	b = jsonstr.AppendPlain(b, r.StartTime)
	b = append(b, `,"end_time":`...)
	b = jsonstr.AppendPlain(b, r.EndTime)
	b = append(b, `,"return_code":`...)
	b = strconv.AppendInt(b, int64(r.ReturnCode), 10)
	b = append(b, `,"sysinfo":{"sysname":`...)
	b = jsonstr.AppendPlain(b, r.Sysinfo.Sysname)
	b = append(b, `,"nodename":`...)
	b = jsonstr.AppendPlain(b, r.Sysinfo.Nodename)
	b = append(b, `,"release":`...)
	b = jsonstr.AppendPlain(b, r.Sysinfo.Release)
	b = append(b, `,"version":`...)
	b = jsonstr.AppendPlain(b, r.Sysinfo.Version)
	b = append(b, `,"machine":`...)
	b = jsonstr.AppendPlain(b, r.Sysinfo.Machine)
	b = append(b, `,"realtime":`...)
	b = strconv.AppendInt(b, int64(r.Sysinfo.Realtime), 10)
	b = append(b, `},"num_threads":`...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, `,"resolution_in_ns":`...)
	if r.Nanoseconds {
		return append(b, '1')
	}
	return append(b, '0')
}

// appendCyclictestThread appends one thread's "ID":{…} of the cyclictest
// JSON, its values in unit.
func appendCyclictestThread(b []byte, t CyclictestThread, unit int64) []byte {
	b = append(b, '"')
	b = strconv.AppendInt(b, int64(t.ID), 10)
	b = append(b, `":{"histogram":{`...)
	if t.Histogram != nil {
		first := true
		for k, c := range t.Histogram.Bins {
			if c == 0 {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, '"')
			b = strconv.AppendInt(b, int64(k), 10)
			b = append(b, `":`...)
			b = strconv.AppendUint(b, c, 10)
		}
	}
	b = append(b, `},"cycles":`...)
	b = strconv.AppendInt(b, t.Cycles, 10)
	b = append(b, `,"min":`...)
	b = strconv.AppendInt(b, floorDiv(t.Min, unit), 10)
	b = append(b, `,"max":`...)
	b = strconv.AppendInt(b, floorDiv(t.Max, unit), 10)
	b = append(b, `,"avg":`...)
	b = strconv.AppendFloat(b, t.Avg/float64(unit), 'f', 2, 64)
	b = append(b, `,"cpu":`...)
	b = strconv.AppendInt(b, int64(t.CPU), 10)
	b = append(b, `,"node":`...)
	b = strconv.AppendInt(b, int64(t.Node), 10)
	return append(b, '}')
}

// floorDiv returns ⌊a / b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

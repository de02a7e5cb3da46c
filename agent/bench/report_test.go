package bench

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// goldenReport is a fixed report: 1000 cycles of a deterministic pattern
// with a few faults, on fixed run information.
func goldenReport(t *testing.T) *Report {
	t.Helper()
	var cs []cycleSpec
	for i := range 1000 {
		c := cycleSpec{cycle: uint64(i), lat: int64(8 + i%7 + (i%10)*(i%10)/9), job: int64(30 + i%11), rtt: int64(20 + i%5), wkc: 8}
		switch i {
		case 100:
			c.lat = 180
		case 500:
			c.flags = 1 // lost frame
			c.wkc = 0
		case 700: // woke 1.2 ms late (beyond the histogram): overran the next deadline
			c.lat = 1200
			c.flags = 4 // overrun
		case 701:
			c.skipped = 1
			c.flags = 8 // skipped
			c.deadline = t0 + 702*int64(target)
		}
		if i > 701 {
			c.cycle, c.deadline = uint64(i), t0+int64(i+1)*int64(target)
		}
		cs = append(cs, c)
	}
	rec, err := NewRecorder(target, uint64(len(cs)), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		s := sample(c)
		rec.Observe(&s)
	}
	start := time.Date(2026, 11, 29, 19, 56, 27, 0, time.UTC)
	rep, err := rec.Report(RunInfo{
		Requested: 1000, Start: start, End: start.Add(time.Second), Slaves: 7, Priority: 80, Core: 1,
		FramesSent: 1000, FramesLost: 1,
		RT: []process.RTSetting{
			{Setting: "sched_fifo", Requested: true, Applied: true},
			{Setting: "affinity", Requested: true, Applied: true},
			{Setting: "mlock", Requested: true, Applied: false, Error: "operation not permitted"},
			{Setting: "dma_latency", Requested: false},
		},
		Telemetry: &Telemetry{Address: "127.0.0.1:9781", ScrapeInterval: time.Second, Scrapes: 1, Windows: 0},
		Cmdline:   "ecagent bench --cycles 1000", Version: "ecagent test",
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testsupport.Golden(t, filepath.Join("testdata", name), got)
}

func TestReportTextGolden(t *testing.T) {
	var b bytes.Buffer
	if err := goldenReport(t).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.golden.txt", b.Bytes())
	for _, want := range []string{
		"cycles run            1000 of 1000  (samples lost to ring drops: 0)",
		"real-time refused     mlock (operation not permitted)",
		"lost frames           1",
		"frames lost           1 of 1000 sent (0.100 %)",
		">= 1000",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}

var testSysinfo = stats.CyclictestSysinfo{Sysname: "Linux", Nodename: "test", Release: "6.1", Version: "#1", Machine: "x86_64"}

func TestJSONIsCyclictestCompatible(t *testing.T) {
	rep := goldenReport(t)
	data, err := rep.JSON(testSysinfo)
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(data) {
		t.Fatalf("invalid JSON:\n%s", data)
	}
	ct, err := stats.ParseCyclictestJSON(data)
	if err != nil {
		t.Fatalf("ParseCyclictestJSON: %v", err)
	}
	if len(ct.Threads) != 1 || ct.Nanoseconds || ct.Cmdline != "ecagent bench --cycles 1000" ||
		ct.StartTime != "Sun, 29 Nov 2026 19:56:27 +0000" || ct.Sysinfo != testSysinfo {
		t.Fatalf("report header %+v", ct)
	}
	th := ct.Threads[0]
	if th.Cycles != 1000 || th.CPU != 1 || th.Max != 1200*us1 || th.Min != rep.WakeupLatency.Min/1000*1000 {
		t.Errorf("thread cycles %d cpu %d min %d max %d", th.Cycles, th.CPU, th.Min, th.Max)
	}
	// Every bin as recorded; the one sample beyond 1000 µs is overflow.
	if th.Histogram == nil || th.Histogram.Overflow != 1 || th.Histogram.Bins[180] != 1 {
		t.Fatalf("histogram %+v", th.Histogram)
	}
	for k, c := range rep.WakeupHistogram.Bins {
		if k < len(th.Histogram.Bins) && th.Histogram.Bins[k] != c || k >= len(th.Histogram.Bins) && c != 0 {
			t.Errorf("bin %d: parsed %d, recorded %d", k, th.Histogram.Bins[k], c)
		}
	}
	// The full report is under "ecagent" and decodes back.
	var top struct {
		Ecagent Report `json:"ecagent"`
	}
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	if got := top.Ecagent; got.Cycles != 1000 || got.LostFrames != 1 || got.Jitter.AbsMax != rep.Jitter.AbsMax ||
		len(got.Jitter.Bins) != len(rep.Jitter.Bins) || got.Telemetry == nil || got.RT[2].Error != "operation not permitted" {
		t.Errorf("decoded report %+v", got)
	}
	// The cyclictest part is byte for byte what CyclictestJSON writes.
	ctOnly, err := stats.CyclictestJSON(rep.CyclictestReport(testSysinfo))
	if err != nil {
		t.Fatal(err)
	}
	prefix := bytes.TrimSuffix(bytes.TrimRight(ctOnly, "\n"), []byte("}"))
	if !bytes.HasPrefix(data, bytes.TrimRight(prefix, "\n")) {
		t.Errorf("the cyclictest part is not cyclictest's layout:\n%s", data)
	}
}

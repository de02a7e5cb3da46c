package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// benchSHM returns a segment path unique to this test process and test;
// when the test ends, a cycle process a failed bench left on it is
// stopped, and the segment removed.
func benchSHM(t *testing.T, name string) string {
	path := fmt.Sprintf("/dev/shm/ecagent-benchtest-%d-%s.shm", os.Getpid(), name)
	t.Cleanup(func() { cyclereap.Stop(t, path) })
	return path
}

// TestBenchSimulatedSegment runs the real cycle process (ecagent-cycle)
// against the simulated segment in another process (this test binary
// standing in for ecagent sim, see TestMain) and checks the report's
// counts and structure, never its timing values.
func TestBenchSimulatedSegment(t *testing.T) {
	t.Setenv("ECAGENT_TEST_MAIN", "1") // the sim process is this binary
	jsonPath := filepath.Join(t.TempDir(), "bench.json")
	code, out, errOut := runCLI(t, context.Background(), cycleEnviron(t), "bench", "--cycles", "2000", "--cycle.period", "1ms",
		"--cycle.shm", benchSHM(t, "sim"), "--json", jsonPath)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"ecagent bench: 1000.0 µs cycle against the simulated segment in another process (7 slaves)",
		"cycles run            2000 of 2000  (samples lost to ring drops: 0)",
		"(expected WKC 8, seen ",
		"real-time applied",
		"Timing                       min         avg         max      stddev         p99       p99.9",
		"  cycle time ", "  wake-up latency ", "  job time ", "  frame round trip ", "  CPU load ",
		"|jitter| p99", "95 % of cycles in     1000.0 µs ± ",
		"Jitter distribution (bin edges in 1-2-5 steps",
		"Wake-up latency histogram",
		"(scrapes: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(errOut, "warning") {
		t.Errorf("warnings on stderr:\n%s", errOut)
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	ct, err := stats.ParseCyclictestJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(ct.Threads) != 1 || ct.Threads[0].Cycles != 2000 || ct.Threads[0].Histogram.Total() != 2000 {
		t.Errorf("JSON report: %+v", ct.Threads)
	}
	if _, err := os.Stat(benchSHM(t, "sim")); !os.IsNotExist(err) {
		t.Errorf("the segment file is left behind: %v", err)
	}
}

// TestBenchCompareCyclictest runs the interleaved comparison for real
// (four blocks of 200 cycles) and checks its structure, never its values.
func TestBenchCompareCyclictest(t *testing.T) {
	if _, err := exec.LookPath("cyclictest"); err != nil {
		t.Skip("cyclictest (Debian package rt-tests) is not installed")
	}
	if os.Geteuid() != 0 {
		t.Skip("cyclictest -m -p needs root")
	}
	t.Setenv("ECAGENT_TEST_MAIN", "1")
	jsonPath := filepath.Join(t.TempDir(), "cmp.json")
	code, out, errOut := runCLI(t, context.Background(), cycleEnviron(t), "bench", "--cycles", "400", "--blocks", "4", "--cycle.period", "1ms",
		"--cycle.shm", benchSHM(t, "cmp"), "--compare-cyclictest", "--histogram-us", "2000", "--json", jsonPath)
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"cycles run            400 of 400",
		"Wake-up latency: ecagent vs cyclictest in 4 interleaved blocks of 200 cycles (200ms) each",
		"(order E C C E;",
		"ecagent  cyclictest    ratio   pair ratio min/med/max target",
		"  cycles         400         400\n",
		"  p50 ", "  p99 ", "  p99.9 ", "  max ",
		"cyclictest: cyclictest -m -t1 -q -i 1000 -l 200 -h 2000 -p 80 --json=",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, out)
		}
	}
	for i, side := range []string{"ecagent", "cyclictest", "cyclictest", "ecagent"} {
		if want := fmt.Sprintf("block %d of 4: %s, 200 cycles of 1ms", i+1, side); !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Ecagent struct {
			Cycles     uint64 `json:"cycles"`
			Comparison struct {
				Order       []string `json:"order"`
				BlockCycles uint64   `json:"block_cycles"`
				Pairs       []any    `json:"pairs"`
				Ecagent     struct {
					Cycles int64 `json:"cycles"`
				} `json:"ecagent"`
			} `json:"cyclictest_comparison"`
		} `json:"ecagent"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	c := doc.Ecagent.Comparison
	if doc.Ecagent.Cycles != 400 || len(c.Order) != 4 || c.BlockCycles != 200 || len(c.Pairs) != 2 || c.Ecagent.Cycles != 400 {
		t.Errorf("JSON comparison: %+v", doc.Ecagent)
	}
}

func TestBenchBlockCycles(t *testing.T) {
	cases := []struct {
		n      uint64
		blocks int
		want   uint64
		ok     bool
	}{
		{10000, 10, 2000, true},
		{10001, 10, 2001, true}, // rounded up
		{400, 2, 400, true},
		{1000, 3, 0, false},
		{1000, 0, 0, false},
		{4, 10, 0, false}, // 1 cycle a block
	}
	for _, c := range cases {
		got, err := benchBlockCycles(c.n, c.blocks)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("benchBlockCycles(%d, %d) = %d, %v; want %d, ok %v", c.n, c.blocks, got, err, c.want, c.ok)
		}
	}
}

func TestBenchUsage(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"cycles and duration", []string{"bench", "--cycles", "10", "--duration", "1s"}, exitUsage, "exclude each other"},
		{"one cycle", []string{"bench", "--cycles", "1"}, exitUsage, "at least 2"},
		{"zero duration", []string{"bench", "--duration", "0s"}, exitUsage, "--duration 0s"},
		{"bad histogram", []string{"bench", "--histogram-us", "0"}, exitUsage, "--histogram-us 0"},
		{"bad period", []string{"bench", "--cycle.period", "10us"}, exitUsage, "cycle.period"},
		{"cyclictest missing", []string{"bench", "--compare-cyclictest", "--cyclictest", "/nonexistent/cyclictest"}, exitFailure, "rt-tests"},
		{"odd blocks", []string{"bench", "--compare-cyclictest", "--cyclictest", "sh", "--blocks", "3"}, exitUsage, "--blocks 3"},
		{"blocks too short", []string{"bench", "--compare-cyclictest", "--cyclictest", "sh", "--cycles", "4", "--blocks", "10"}, exitUsage, "at least 2"},
		{"cyclictest needs whole µs", []string{"bench", "--compare-cyclictest", "--cyclictest", "sh", "--cycle.period", "1500500ns"}, exitUsage, "whole microseconds"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, ctx, nil, c.args...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Errorf("exit %d (want %d), stderr %q (want it to contain %q)", code, c.code, stderr, c.stderr)
			}
		})
	}
}

func TestBenchCycles(t *testing.T) {
	cases := []struct {
		cyclesSet     bool
		cycles        uint64
		durationSet   bool
		duration, per time.Duration
		want          uint64
		wantErr       bool
	}{
		{false, 0, false, 10 * time.Second, time.Millisecond, 10000, false},
		{false, 0, true, 20 * time.Second, 250 * time.Microsecond, 80000, false},
		{false, 0, true, 1001 * time.Microsecond, time.Millisecond, 2, false}, // rounded up
		{true, 2000, false, 10 * time.Second, time.Millisecond, 2000, false},
		{true, 2000, true, time.Second, time.Millisecond, 0, true},
		{false, 0, true, time.Millisecond, time.Millisecond, 0, true}, // one cycle
	}
	for _, c := range cases {
		got, err := benchCycles(c.cyclesSet, c.cycles, c.durationSet, c.duration, c.per)
		if got != c.want || (err != nil) != c.wantErr {
			t.Errorf("benchCycles(%v, %d, %v, %v, %v) = %d, %v; want %d, error %v",
				c.cyclesSet, c.cycles, c.durationSet, c.duration, c.per, got, err, c.want, c.wantErr)
		}
	}
}

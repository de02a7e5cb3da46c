package metrics

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestParseProcStat(t *testing.T) {
	fixture, err := os.ReadFile("testdata/proc/stat")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		text      string
		core      int
		all, cpu  cpuTicks
		wantError bool
	}{
		{
			name: "fixture, core 1",
			text: string(fixture), core: 1,
			// busy = user+nice+system+irq+softirq+steal; total adds idle+iowait.
			all: cpuTicks{busy: 48211 + 312 + 20957 + 1571, total: 48211 + 312 + 20957 + 1833746 + 2108 + 1571},
			cpu: cpuTicks{busy: 23410 + 162 + 10247 + 161, total: 23410 + 162 + 10247 + 917543 + 1068 + 161},
		},
		{
			name: "fixture, not pinned",
			text: string(fixture), core: -1,
			all: cpuTicks{busy: 48211 + 312 + 20957 + 1571, total: 48211 + 312 + 20957 + 1833746 + 2108 + 1571},
		},
		{
			name: "guest time is not counted twice",
			text: "cpu  10 0 10 80 0 0 0 5 100 100\n", core: -1,
			all: cpuTicks{busy: 25, total: 105},
		},
		{name: "old kernel with four fields", text: "cpu 1 2 3 4\n", core: -1, all: cpuTicks{busy: 6, total: 10}},
		{name: "core missing", text: string(fixture), core: 7, wantError: true},
		{name: "no aggregate line", text: "cpu0 1 2 3 4\n", core: -1, wantError: true},
		{name: "too few fields", text: "cpu 1 2 3\n", core: -1, wantError: true},
		{name: "not a number", text: "cpu 1 2 x 4\n", core: -1, wantError: true},
		{name: "empty", text: "", core: -1, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, cpu, err := parseProcStat(tt.text, tt.core)
			if tt.wantError {
				if !errors.Is(err, ErrProcFormat) {
					t.Errorf("error %v, want ErrProcFormat", err)
				}
				return
			}
			if err != nil || all != tt.all || cpu != tt.cpu {
				t.Errorf("got %+v %+v %v, want %+v %+v", all, cpu, err, tt.all, tt.cpu)
			}
		})
	}
}

func TestParseProcessStat(t *testing.T) {
	fixture, err := os.ReadFile("testdata/proc/4242/stat")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		text      string
		want      uint64
		wantError bool
	}{
		{name: "fixture with parentheses in the name", text: string(fixture), want: 1234 + 567},
		{name: "plain", text: "1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 50 60 0 0 20 0 1 0 5", want: 110},
		{name: "no name", text: "1 init S 0", wantError: true},
		{name: "truncated", text: "1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 50", wantError: true},
		{name: "not a number", text: "1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5x 60", wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcessStat(tt.text)
			if tt.wantError {
				if !errors.Is(err, ErrProcFormat) {
					t.Errorf("error %v, want ErrProcFormat", err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

// fakeProc is a /proc tree in a temporary directory whose stat file the
// test rewrites between scrapes.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) *fakeProc {
	root := t.TempDir()
	p := &fakeProc{t: t, root: root}
	b, err := os.ReadFile("testdata/proc/4242/stat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "4242", "stat"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// setStat writes a /proc/stat whose aggregate and cpu1 lines have the
// given busy and idle ticks.
func (p *fakeProc) setStat(allBusy, allIdle, coreBusy, coreIdle uint64) {
	text := fmt.Sprintf("cpu  %d 0 0 %d 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\ncpu1 %d 0 0 %d 0 0 0 0 0 0\nctxt 1\n",
		allBusy, allIdle, coreBusy, coreIdle)
	if err := os.WriteFile(filepath.Join(p.root, "stat"), []byte(text), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// TestHostCollector checks the busy ratios over successive readings, the
// one-second minimum interval and the success gauge.
func TestHostCollector(t *testing.T) {
	p := newFakeProc(t)
	p.setStat(100, 900, 50, 450)
	c := newHostCollector(Documented(), p.root, 1)
	now := time.Unix(1_700_000_000, 0)
	c.now = func() time.Time { return now }

	expect := func(step, body string) {
		t.Helper()
		want := "# HELP " + nameCollectorOK + " " + helpOf(Documented(), nameCollectorOK) + "\n# TYPE " + nameCollectorOK + " gauge\n" + body
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), nameHostBusy, nameCoreBusy, nameCollectorOK); err != nil {
			t.Errorf("%s: %v", step, err)
		}
	}
	ratios := func(host, core string) string {
		return "# HELP " + nameHostBusy + " " + helpOf(Documented(), nameHostBusy) + "\n# TYPE " + nameHostBusy + " gauge\n" +
			nameHostBusy + " " + host + "\n" +
			"# HELP " + nameCoreBusy + " " + helpOf(Documented(), nameCoreBusy) + "\n# TYPE " + nameCoreBusy + " gauge\n" +
			nameCoreBusy + " " + core + "\n"
	}
	ok := func(v string) string { return nameCollectorOK + `{collector="host_cpu"} ` + v + "\n" }

	// Nothing has advanced since the first reading: no ratio yet.
	expect("unchanged", ok("1"))

	// 200 of 1000 ticks busy on the host, 150 of 500 on cpu1.
	p.setStat(300, 1700, 200, 800)
	now = now.Add(2 * time.Second)
	expect("advanced", ok("1")+ratios("0.2", "0.3"))

	// Within a second of the last reading: the same ratios.
	p.setStat(1300, 1700, 700, 800)
	now = now.Add(500 * time.Millisecond)
	expect("too soon", ok("1")+ratios("0.2", "0.3"))

	// A second later the new reading counts: all busy.
	now = now.Add(600 * time.Millisecond)
	expect("after a second", ok("1")+ratios("1", "1"))

	// An unreadable file: success 0, last ratios kept.
	if err := os.Remove(filepath.Join(p.root, "stat")); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second)
	expect("unreadable", ok("0")+ratios("1", "1"))
}

// TestHostCollectorUnpinned checks that no core ratio is exported when the
// cycle is not pinned.
func TestHostCollectorUnpinned(t *testing.T) {
	p := newFakeProc(t)
	p.setStat(100, 900, 50, 450)
	c := newHostCollector(Documented(), p.root, -1)
	p.setStat(200, 1800, 100, 900)
	if n := testutil.CollectAndCount(c, nameCoreBusy); n != 0 {
		t.Errorf("%d core ratios without a cycle core, want 0", n)
	}
	if n := testutil.CollectAndCount(c, nameHostBusy); n != 1 {
		t.Errorf("%d host ratios, want 1", n)
	}
}

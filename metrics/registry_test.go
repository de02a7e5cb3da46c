package metrics

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/ecagent/ecagent/agent/shm"
)

// populate gives every conditional series a value: samples, slaves,
// error counters, the cycle process, real-time settings and checks.
func populate(t testing.TB, r *Registry) {
	t.Helper()
	c := r.Consumer()
	for i := range 10 {
		s := cycleSample(uint64(i), int64(1000*(i+1)), 20_000, 100_000)
		if i == 4 {
			s.Flags |= shm.SampleLostFrame | shm.SampleWKCMismatch
		}
		if i == 7 {
			s.Flags |= shm.SampleOverrun
		}
		if i == 8 {
			s.Flags |= shm.SampleSkipped
			s.Skipped = 2
		}
		if i%2 == 0 {
			s.Flags |= shm.SampleDCValid
			s.DCDiff = int32(-10 * i)
		}
		c.Observe(&s)
	}
	c.SetRingDrops(2)
	c.CloseWindow()

	r.SetSlaves([]Slave{
		{Position: 0, Name: "EK1100", ALState: ALStateOp},
		{Position: 1, Name: "EL2004", ALState: ALStateOp},
		{Position: 2, Name: "EL1014", ALState: ALStateSafeOp, ALStatusCode: 0x001B},
	})
	r.SetSlaveErrorCounters(2, "EL1014", ESCErrorCounters{
		Ports: [4]PortErrorCounters{{InvalidFrame: 1, RXError: 2}, {LostLink: 3}},
		PDI:   4,
	})
	r.CycleProcessStarted(testPID)
	r.SetRTSetting(RTSchedFIFO, true)
	r.SetRTSetting(RTMlock, true)
	r.SetRTSetting(RTAffinity, true)
	r.SetRTSetting(RTDMALatency, false)
	for check, status := range map[string]CheckStatus{"preempt_rt": CheckFail, "isolcpus": CheckWarn, "swap": CheckPass} {
		if err := r.SetRTCheck(check, status); err != nil {
			t.Fatalf("SetRTCheck: %v", err)
		}
	}
}

// TestLint runs promlint over everything the registry exports.
func TestLint(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	populate(t, r)
	problems, err := testutil.GatherAndLint(r.Gatherer())
	if err != nil {
		t.Fatalf("GatherAndLint: %v", err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// goldenFamilies are the counter and gauge families of the golden
// exposition: all documented ones except those whose values depend on the
// build or the clock.
func goldenFamilies() []string {
	var names []string
	for _, s := range Documented() {
		switch s.Name {
		case nameBuildInfo, nameHostBusy, nameCoreBusy:
			continue
		}
		if s.Type != TypeHistogram {
			names = append(names, s.Name)
		}
	}
	return names
}

// TestGoldenExposition compares the counters and gauges of a populated
// registry with testdata/exposition.golden; -update rewrites it.
func TestGoldenExposition(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	populate(t, r)
	golden := filepath.Join("testdata", "exposition.golden")
	if *update {
		text, err := testutil.GatherAndFormat(r.Gatherer(), expfmt.TypeTextPlain, goldenFamilies()...)
		if err != nil {
			t.Fatalf("GatherAndFormat: %v", err)
		}
		if err := os.WriteFile(golden, text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if err := testutil.GatherAndCompare(r.Gatherer(), bytes.NewReader(want), goldenFamilies()...); err != nil {
		t.Errorf("exposition differs from %s (run with -update if intended):\n%v", golden, err)
	}
	// Every golden family must be in the file: a family missing from both
	// sides would compare equal.
	for _, name := range goldenFamilies() {
		if !bytes.Contains(want, []byte("# TYPE "+name+" ")) {
			t.Errorf("%s has no %s", golden, name)
		}
	}
}

// TestFleetLabels checks that every series carries site, line and host.
func TestFleetLabels(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	populate(t, r)
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{labelSite: "plant-1", labelLine: "line-3", labelHost: "ipc-7"}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for k, v := range want {
				if got := labelValue(m, k); got != v {
					t.Errorf("%s: %s=%q, want %q", mf.GetName(), k, got, v)
				}
			}
		}
	}
}

// TestBuildInfo checks ecagent_build_info's labels.
func TestBuildInfo(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	m := family(t, r, nameBuildInfo).GetMetric()[0]
	if m.GetGauge().GetValue() != 1 || labelValue(m, "version") != "v1.2.3" || labelValue(m, "revision") != "0123abcd" ||
		!strings.HasPrefix(labelValue(m, "goversion"), "go") {
		t.Errorf("build info %v, want 1 with version v1.2.3, revision 0123abcd and a Go version", m)
	}
}

// TestSetSlaves checks that a new scan replaces the slave series.
func TestSetSlaves(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	populate(t, r)
	r.SetSlaves([]Slave{{Position: 0, Name: "EK1100", ALState: ALStateInit}})
	if n := len(family(t, r, nameSlaveALState).GetMetric()); n != 1 {
		t.Errorf("%d AL state series after a rescan to one slave, want 1", n)
	}
	if got := gaugeByLabel(t, family(t, r, nameSlaveALState), labelName, "EK1100"); got != 1 {
		t.Errorf("EK1100 AL state %g, want 1 (INIT)", got)
	}
	if got := family(t, r, nameBusSlaves).GetMetric()[0].GetGauge().GetValue(); got != 1 {
		t.Errorf("bus slaves %g, want 1", got)
	}
	if n, _ := testutil.GatherAndCount(r.Gatherer(), nameSlavePortErrors); n != 0 {
		t.Errorf("%d port error series of departed slaves, want 0", n)
	}
	r.SetSlave(Slave{Position: 0, Name: "EK1100", ALState: ALStateOp})
	if got := gaugeByLabel(t, family(t, r, nameSlaveALState), labelName, "EK1100"); got != 8 {
		t.Errorf("EK1100 AL state %g, want 8 (OP)", got)
	}
}

// TestSetRTCheck checks the state-set encoding and the argument checks.
func TestSetRTCheck(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	for _, status := range []CheckStatus{CheckPass, CheckFail, CheckWarn} {
		if err := r.SetRTCheck("governor", status); err != nil {
			t.Fatal(err)
		}
		mf := family(t, r, nameRTCheck)
		if len(mf.GetMetric()) != 4 {
			t.Fatalf("%d series for one check, want 4 (one per status)", len(mf.GetMetric()))
		}
		for _, s := range checkStatuses() {
			want := 0.0
			if s == status {
				want = 1
			}
			if got := gaugeByLabel(t, mf, labelStatus, string(s)); got != want {
				t.Errorf("after %s: status=%s is %g, want %g", status, s, got, want)
			}
		}
	}
	for _, bad := range []struct {
		check  string
		status CheckStatus
	}{{"governor", "ok"}, {"", CheckPass}} {
		if err := r.SetRTCheck(bad.check, bad.status); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("SetRTCheck(%q, %q) = %v, want ErrInvalidArgument", bad.check, bad.status, err)
		}
	}
}

// TestCycleProcess checks the process gauges and counter.
func TestCycleProcess(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	value := func(name string) float64 {
		m := family(t, r, name).GetMetric()[0]
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	if value(nameProcessUp) != 0 {
		t.Errorf("process up before start")
	}
	r.CycleProcessStarted(testPID)
	if value(nameProcessUp) != 1 || value(nameProcessStarts) != 1 || !closeTo(value(nameProcessCPU), 18.01) {
		t.Errorf("after start: up %g, starts %g, cpu %g; want 1, 1, 18.01",
			value(nameProcessUp), value(nameProcessStarts), value(nameProcessCPU))
	}
	r.CycleProcessExited()
	if value(nameProcessUp) != 0 {
		t.Errorf("process up after exit")
	}
	if n, _ := testutil.GatherAndCount(r.Gatherer(), nameProcessCPU); n != 0 {
		t.Errorf("CPU seconds of an exited process still exported")
	}
	r.CycleProcessAttached(testPID)
	if value(nameProcessUp) != 1 || value(nameProcessStarts) != 1 {
		t.Errorf("after attach: up %g, starts %g; want 1, 1", value(nameProcessUp), value(nameProcessStarts))
	}
	r.CycleProcessStarted(999_999) // no such fixture: the collector says so
	if got := gaugeByLabel(t, family(t, r, nameCollectorOK), labelColl, collectorCycleProcess); got != 0 {
		t.Errorf("collector success for a missing process %g, want 0", got)
	}
}

// TestNewRegistryOptions checks the option errors.
func TestNewRegistryOptions(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
	}{
		{"empty site", func(o *Options) { o.Site = "" }},
		{"empty host", func(o *Options) { o.Host = "" }},
		{"zero target", func(o *Options) { o.Target = 0 }},
		{"negative window", func(o *Options) { o.Window = -time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions()
			tt.change(&o)
			if _, err := NewRegistry(o); !errors.Is(err, ErrInvalidOptions) {
				t.Errorf("NewRegistry = %v, want ErrInvalidOptions", err)
			}
		})
	}
}

// TestWindowCapacity checks the window sizing.
func TestWindowCapacity(t *testing.T) {
	tests := []struct {
		window, period time.Duration
		want           int
	}{
		{10 * time.Second, time.Millisecond, 11_016},
		{10 * time.Second, 250 * time.Microsecond, 44_016},
		{time.Hour, 50 * time.Microsecond, MaxWindowCapacity},
		{0, time.Millisecond, 1},
	}
	for _, tt := range tests {
		if got := WindowCapacity(tt.window, tt.period); got != tt.want {
			t.Errorf("WindowCapacity(%v, %v) = %d, want %d", tt.window, tt.period, got, tt.want)
		}
	}
}

// TestSeriesMarkdown compares the README table with
// testdata/series.md; -update rewrites it.
func TestSeriesMarkdown(t *testing.T) {
	golden := filepath.Join("testdata", "series.md")
	got := SeriesMarkdown()
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("SeriesMarkdown differs from %s (run with -update if intended)", golden)
	}
	if n := strings.Count(got, "\n| `ecagent_"); n != len(Documented()) {
		t.Errorf("table has %d rows, want %d", n, len(Documented()))
	}
}

// TestDocumented checks the series table itself.
func TestDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Documented() {
		if seen[s.Name] {
			t.Errorf("%s documented twice", s.Name)
		}
		seen[s.Name] = true
		if !strings.HasPrefix(s.Name, "ecagent_") || s.Help == "" {
			t.Errorf("%s: want the ecagent_ prefix and a help text", s.Name)
		}
		if (s.Type == TypeCounter) != strings.HasSuffix(s.Name, "_total") {
			t.Errorf("%s: _total is for counters and only counters", s.Name)
		}
	}
}

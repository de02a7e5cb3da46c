package bench

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
)

// cyclictestOf builds a one-thread cyclictest report from latencies in µs
// with a histogram of histMicros bins, as cyclictest -h would record them.
func cyclictestOf(t *testing.T, histMicros int, lats ...int64) *stats.CyclictestReport {
	t.Helper()
	w, err := stats.NewWindow(len(lats))
	if err != nil {
		t.Fatal(err)
	}
	h, err := stats.NewLinearHistogram(0, 1000, histMicros)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lats {
		w.Add(l * us1)
		h.Add(l * us1)
	}
	return &stats.CyclictestReport{Cmdline: "cyclictest -m", Threads: []stats.CyclictestThread{stats.NewCyclictestThread(0, w.Snapshot(), h, 0, 0)}}
}

func TestCyclictestArgs(t *testing.T) {
	cases := []struct {
		name string
		c    Cyclictest
		want []string
	}{
		{"fifo pinned", Cyclictest{Interval: 250 * time.Microsecond, Priority: 80, Core: 1, Loops: 80000, HistogramMicros: 1000},
			[]string{"-m", "-t1", "-q", "-i", "250", "-l", "80000", "-h", "1000", "-p", "80", "-a", "1", "--json=/tmp/x.json"}},
		{"normal scheduler, any core", Cyclictest{Interval: time.Millisecond, Priority: 0, Core: -1, Loops: 10, HistogramMicros: 400},
			[]string{"-m", "-t1", "-q", "-i", "1000", "-l", "10", "-h", "400", "--policy=other", "--json=/tmp/x.json"}},
	}
	for _, c := range cases {
		if got := c.c.Args("/tmp/x.json"); !slices.Equal(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCyclictestCheck(t *testing.T) {
	ok := Cyclictest{Binary: "sh", Interval: time.Millisecond, Loops: 10, HistogramMicros: 100}
	var missing *MissingCyclictestError
	cases := []struct {
		name    string
		c       Cyclictest
		missing bool
		ok      bool
	}{
		{"installed", ok, false, true},
		{"not installed", Cyclictest{Binary: "/nonexistent/cyclictest", Interval: time.Millisecond, Loops: 1, HistogramMicros: 1}, true, false},
		{"sub-µs interval", Cyclictest{Binary: "sh", Interval: 1500 * time.Nanosecond, Loops: 1, HistogramMicros: 1}, false, false},
		{"no loops", Cyclictest{Binary: "sh", Interval: time.Millisecond, HistogramMicros: 1}, false, false},
	}
	for _, c := range cases {
		err := c.c.Check()
		if (err == nil) != c.ok || errors.As(err, &missing) != c.missing {
			t.Errorf("%s: err %v", c.name, err)
		}
		if c.missing && (err == nil || !strings.Contains(err.Error(), "rt-tests")) {
			t.Errorf("%s: the error does not name the package: %v", c.name, err)
		}
	}
	if _, err := (Cyclictest{Binary: "/nonexistent/cyclictest"}).Run(context.Background()); !errors.As(err, &missing) {
		t.Errorf("Run without cyclictest: %v", err)
	}
}

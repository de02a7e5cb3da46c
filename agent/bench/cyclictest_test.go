package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/metrics/stats"
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

// latencies returns n latencies: base µs for all but the top 1 % (p99
// and above), which get tail µs, and the top 0.1 %, which get spike µs.
func latencies(n int, base, tail, spike int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		switch {
		case i >= n-n/1000-1:
			out[i] = spike
		case i >= n-n/100-1:
			out[i] = tail
		default:
			out[i] = base
		}
	}
	return out
}

func TestCompare(t *testing.T) {
	cases := []struct {
		name                   string
		ecagent, cyclic        []int64
		p99, p999              float64
		p99Met, p999Met, exact bool
	}{
		{"both met", latencies(2000, 10, 22, 40), latencies(2000, 10, 20, 30), 1.1, 40.0 / 30, true, true, true},
		{"p99 missed", latencies(2000, 10, 30, 40), latencies(2000, 10, 20, 30), 1.5, 40.0 / 30, false, true, true},
		{"p99.9 missed", latencies(2000, 10, 20, 50), latencies(2000, 10, 20, 30), 1, 50.0 / 30, true, false, true},
		{"cyclictest 0 µs counts as 1 µs", latencies(2000, 0, 1, 1), latencies(2000, 0, 0, 0), 1, 1, true, true, true},
		{"cyclictest beyond its histogram", latencies(2000, 10, 20, 30), latencies(2000, 10, 20, 200), 1, 30.0 / 100, true, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var cs []cycleSpec
			for i, l := range c.ecagent {
				cs = append(cs, cycleSpec{cycle: uint64(i), lat: l, job: 10, rtt: 5, wkc: 8})
			}
			// A sub-µs part on ecagent's side must be truncated away.
			rec, err := NewRecorder(target, uint64(len(cs)), 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, spec := range cs {
				s := sample(spec)
				s.Wake += 700
				rec.Observe(&s)
			}
			rep, err := rec.Report(RunInfo{})
			if err != nil {
				t.Fatal(err)
			}
			cmp, err := Compare(rep, cyclictestOf(t, 100, c.cyclic...))
			if err != nil {
				t.Fatal(err)
			}
			if cmp.P99Ratio != c.p99 || cmp.P999Ratio != c.p999 || cmp.P99Met != c.p99Met || cmp.P999Met != c.p999Met {
				t.Errorf("p99 ratio %v met %v, p99.9 ratio %v met %v; want %v %v, %v %v",
					cmp.P99Ratio, cmp.P99Met, cmp.P999Ratio, cmp.P999Met, c.p99, c.p99Met, c.p999, c.p999Met)
			}
			if cmp.Cyclictest.PercentilesExact != c.exact || !cmp.Ecagent.PercentilesExact {
				t.Errorf("exact: cyclictest %v ecagent %v", cmp.Cyclictest.PercentilesExact, cmp.Ecagent.PercentilesExact)
			}
			if cmp.Ecagent.Cycles != 2000 || cmp.Cyclictest.Cycles != 2000 {
				t.Errorf("cycles %d / %d", cmp.Ecagent.Cycles, cmp.Cyclictest.Cycles)
			}
			var b bytes.Buffer
			if err := cmp.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			verdict := map[bool]string{true: "met", false: "NOT met"}
			for _, want := range []string{"<= 1.2  " + verdict[c.p99Met] + "\n", "<= 1.5  " + verdict[c.p999Met] + "\n", "cyclictest: cyclictest -m"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("comparison lacks %q:\n%s", want, b.String())
				}
			}
			if _, err := json.Marshal(cmp); err != nil {
				t.Errorf("comparison does not encode: %v", err)
			}
		})
	}
}

func TestCompareNeedsAHistogram(t *testing.T) {
	rep := record(t, simple(10, 20, 30), 100)
	ct := cyclictestOf(t, 100, 10, 20)
	ct.Threads[0].Histogram = nil
	if _, err := Compare(rep, ct); !errors.Is(err, ErrNoCyclictestThread) {
		t.Errorf("err %v", err)
	}
	if _, err := Compare(rep, &stats.CyclictestReport{}); !errors.Is(err, ErrNoCyclictestThread) {
		t.Errorf("err %v", err)
	}
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

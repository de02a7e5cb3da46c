package metrics

import (
	"math"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/cyclestatstest"
	dto "github.com/prometheus/client_model/go"
)

const (
	testTarget = cyclestatstest.Target
	testPID    = 4242 // testdata/proc/4242/stat
)

// testOptions returns options with the fixture /proc tree.
func testOptions() Options {
	return Options{
		Site: "plant-1", Line: "line-3", Host: "ipc-7",
		Target:    testTarget,
		Window:    10 * time.Second,
		ProcRoot:  "testdata/proc",
		CycleCore: 1,
		Version:   "v1.2.3", Revision: "0123abcd",
		// Every series, zeros included, so the goldens document them all;
		// the standard detail is tested against it (detail_test.go).
		Detail: DetailFull,
	}
}

func newTestRegistry(t testing.TB, opts Options) *Registry {
	t.Helper()
	r, err := NewRegistry(opts)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return r
}

// cycleSample and sampleStream make the samples the tests feed
// (cyclestatstest.On and Stream, on testTarget).
var (
	cycleSample  = cyclestatstest.On
	sampleStream = cyclestatstest.Stream
)

// family gathers the registry and returns one family, failing the test if
// it is missing.
func family(t testing.TB, r *Registry, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := r.Gatherer().Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("family %s not gathered", name)
	return nil
}

// labelValue returns the value of a metric's label, "" if absent.
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// gaugeByLabel returns the value of the gauge in mf whose label has the
// given value.
func gaugeByLabel(t testing.TB, mf *dto.MetricFamily, label, value string) float64 {
	t.Helper()
	for _, m := range mf.GetMetric() {
		if labelValue(m, label) == value {
			return m.GetGauge().GetValue()
		}
	}
	t.Fatalf("%s has no series with %s=%q", mf.GetName(), label, value)
	return math.NaN()
}

// closeTo reports whether got is within a relative 1e-9 (or absolute
// 1e-15) of want; NaN equals NaN.
func closeTo(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= math.Max(1e-15, 1e-9*math.Abs(want))
}

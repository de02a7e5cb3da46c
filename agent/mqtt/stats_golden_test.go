package mqtt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/cyclestats/stats"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// fullReport is a window in which every counter and every statistic has a
// value of its own, so that a figure rendered in the wrong place shows.
func fullReport(target int64) cyclestats.Report {
	r := cyclestats.Report{Target: target}
	for c := range r.Counts {
		r.Counts[c] = int64(1000 + 11*c)
	}
	for q := range r.Windows {
		base := int64(100 * (q + 1))
		r.Windows[q] = stats.Summary{Count: 900 + int64(q), Min: base + 1, Max: base + 90, Mean: float64(base) + 20.25, StdDev: float64(q) + 3.5,
			P50: base + 10, P90: base + 30, P99: base + 50, P999: base + 70, P9999: base + 80}
	}
	r.Windows[cyclestats.QuantityFrameRTT].Approximate = true
	r.Windows[cyclestats.QuantityDCTimeDifference] = stats.Summary{} // a window without a DC value
	return r
}

// TestStatsPayloadsGolden pins the window statistics as both schemes
// publish them, byte for byte: the JSON stats message, and the Sparkplug
// statistics metrics of NBIRTH (names, aliases, datatypes) and of the
// NDATA of a window (payload bytes and their metrics). A window with a
// target of 0 shows what is left out then.
func TestStatsPayloadsGolden(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	var b strings.Builder
	for _, target := range []int64{1_000_000, 0} {
		r := fullReport(target)
		fmt.Fprintf(&b, "# target %d ns\n", target)

		js := idlePublisher(t, SchemeJSON)
		js.Window(&r, at)
		for _, m := range js.out.drain() {
			fmt.Fprintf(&b, "JSON %s qos %d retain %v\n%s\n", m.topic, m.qos, m.retain, m.payload)
		}

		sp := idlePublisher(t, SchemeSparkplug)
		sp.Window(&r, at)
		for _, m := range sp.out.drain() {
			fmt.Fprintf(&b, "Sparkplug %s\n%x\n", m.topic, m.payload)
			writeMetrics(t, &b, m.payload)
		}
		for _, m := range sp.r.Announce(nil, nil, 3) {
			fmt.Fprintf(&b, "Sparkplug %s (statistics metrics)\n", m.Topic)
			writeMetrics(t, &b, m.Payload, "Stats/")
		}
	}
	testsupport.Golden(t, "testdata/stats.golden", []byte(b.String()))
}

// writeMetrics lists the metrics of a Sparkplug payload, one a line, those
// whose name starts with one of prefixes when any is given.
func writeMetrics(t *testing.T, b *strings.Builder, payload []byte, prefixes ...string) {
	t.Helper()
	var pl sparkplug.Payload
	if err := sparkplug.DecodePayload(payload, &pl); err != nil {
		t.Fatal(err)
	}
	for _, m := range pl.Metrics {
		if len(prefixes) > 0 && !strings.HasPrefix(m.Name, prefixes[0]) {
			continue
		}
		var v any = m.Int
		if m.DataType == sparkplug.Double {
			v = m.Float
		}
		fmt.Fprintf(b, "  alias %d name %q %v null %v historical %v value %v\n", m.Alias, m.Name, m.DataType, m.Null, m.Historical, v)
	}
}

package otlp

import (
	"context"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats"
	"github.com/ecagent/ecagent/agent/metrics/otlp/otlptest"
	"github.com/ecagent/ecagent/shm"
)

const testTarget = time.Millisecond

// clearOTELEnv empties every OTEL_* variable these tests or the SDK read,
// so the machine's environment cannot change a test's outcome.
func clearOTELEnv(t *testing.T) {
	t.Helper()
	for _, v := range []string{
		"OTEL_SDK_DISABLED", "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS",
		"OTEL_EXPORTER_OTLP_METRICS_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE",
		"OTEL_METRIC_EXPORT_INTERVAL", "OTEL_RESOURCE_ATTRIBUTES", "OTEL_SERVICE_NAME",
	} {
		t.Setenv(v, "")
	}
}

func testOptions(endpoint string, p Protocol) Options {
	return Options{Endpoint: endpoint, Protocol: p, Interval: time.Hour, // exports only on Flush
		Site: "plant-1", Line: "line-3", Host: "ipc-7", Version: "v1.2.3", Target: testTarget}
}

// sampleLatency is the wake-up latency of cycle i in the test data: 10 µs,
// 60 µs every 100th cycle, 310 µs at cycle 500.
func sampleLatency(i int) int64 {
	switch {
	case i == 500:
		return 310_000
	case i%100 == 0:
		return 60_000
	}
	return 10_000
}

// testSamples is n cycles on a 1 ms schedule with the latencies above, a
// 20 µs frame round trip (every 250th frame lost, its answer discarded
// late by the next cycle), a 100 µs job (an overrun skipping two
// deadlines at cycle 700), a WKC error every 333rd cycle, a DC difference
// on even cycles and a DC controller error on every third cycle.
func testSamples(n int) []shm.Sample {
	out := make([]shm.Sample, n)
	for i := range out {
		deadline := 1_000_000_000 + int64(i)*testTarget.Nanoseconds()
		wake := deadline + sampleLatency(i)
		s := shm.Sample{Cycle: uint64(i), Deadline: deadline, Wake: wake, Send: wake + 1000, Recv: wake + 21_000,
			End: wake + 100_000, WKC: 8, ExpectedWKC: 8}
		if i%250 == 249 {
			s.Flags |= shm.SampleLostFrame
			s.Recv = s.Send
		}
		if i%250 == 0 && i > 0 {
			s.Flags |= shm.SampleLateAnswer
		}
		if i%333 == 332 {
			s.Flags |= shm.SampleWKCMismatch
			s.WKC = 6
		}
		if i == 700 {
			s.Flags |= shm.SampleOverrun
			s.Skipped = 2
		}
		if i%2 == 0 {
			s.Flags |= shm.SampleDCValid
			s.DCDiff = int32((i%7 - 3) * 10)
		}
		if i%3 == 0 {
			s.Flags |= shm.SampleCtlValid
			s.CtlErr = int32((i%11 - 5) * 40)
		}
		out[i] = s
	}
	return out
}

// newHTTPExporter starts an OTLP/HTTP receiver and an exporter of protocol
// p (testOptions) sending to it, with the OTEL_* environment cleared; both
// stop when t ends, the exporter first.
func newHTTPExporter(t *testing.T, p Protocol) (*Exporter, *otlptest.Receiver) {
	t.Helper()
	clearOTELEnv(t)
	rcv, err := otlptest.NewHTTP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rcv.Close)
	e, err := New(context.Background(), testOptions(rcv.URL(), p))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return e, rcv
}

// ringDrops returns the segment totals of n ring drops.
func ringDrops(n uint64) cyclestats.SegmentCounts {
	var s cyclestats.SegmentCounts
	s[cyclestats.CounterRingDrops] = n
	return s
}

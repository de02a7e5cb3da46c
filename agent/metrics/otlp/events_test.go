package otlp

import (
	"context"
	"maps"
	"testing"

	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/ecagent/ecagent/agent/metrics/otlp/otlptest"
)

// TestEventMethods exports emergencies and drive events and checks the
// per-slave data points: counts, last codes and states, with the position
// and name attributes.
func TestEventMethods(t *testing.T) {
	e, rcv := newHTTPExporter(t, ProtocolHTTPProtobuf)
	ctx := context.Background()
	e.Emergency(1, "AKD", 0x8611)
	e.Emergency(1, "AKD", 0x8400)
	e.Emergency(2, "EL3004", 0xFF01)
	e.SetDriveState(1, "AKD", 5) // operation enabled (CiA 402 state numbers as ecagent_drive_state exports them)
	e.DriveFault(1, "AKD", 0x7305)
	e.SetDriveState(1, "AKD", 8) // fault
	e.DriveFault(3, "EL7201", 0x2310)
	e.DriveFaultCleared(3, "EL7201")
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	exports := rcv.Exports()
	// points returns "position/name" → value of the newest data of a metric.
	points := func(name string) map[string]int64 {
		m, _ := otlptest.Latest(exports, name)
		if m == nil {
			t.Fatalf("%s not exported", name)
		}
		var dps []*metricspb.NumberDataPoint
		if m.GetSum() != nil {
			if !m.GetSum().GetIsMonotonic() {
				t.Errorf("%s: a sum that is not monotonic", name)
			}
			dps = m.GetSum().GetDataPoints()
		} else {
			dps = m.GetGauge().GetDataPoints()
		}
		out := map[string]int64{}
		for _, dp := range dps {
			a := otlptest.Attributes(dp.GetAttributes())
			out[a["position"]+"/"+a["name"]] = dp.GetAsInt()
		}
		return out
	}
	tests := []struct {
		name string
		want map[string]int64
	}{
		{nameEmergencies, map[string]int64{"1/AKD": 2, "2/EL3004": 1}},
		{nameLastEmergency, map[string]int64{"1/AKD": 0x8400, "2/EL3004": 0xFF01}},
		{nameDriveState, map[string]int64{"1/AKD": 8}},
		{nameDriveFaults, map[string]int64{"1/AKD": 1, "3/EL7201": 1}},
		{nameDriveError, map[string]int64{"1/AKD": 0x7305, "3/EL7201": 0}},
	}
	for _, tt := range tests {
		if got := points(tt.name); !maps.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

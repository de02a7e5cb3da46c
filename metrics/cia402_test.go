package metrics_test

import (
	"testing"

	"github.com/ecagent/ecagent/master/cia402"
	"github.com/ecagent/ecagent/metrics"
)

// TestDriveStateMatchesCiA402 keeps the numbers of ecagent_drive_state
// equal to package master/cia402's State, whose value the cycle sends in
// shm.EventDriveState and the agent passes to SetDriveState as it comes.
func TestDriveStateMatchesCiA402(t *testing.T) {
	for s := cia402.StateUnknown; s <= cia402.StateFault; s++ {
		if got := metrics.DriveState(s).String(); got != s.String() {
			t.Errorf("state %d: metrics names it %q, cia402 %q", s, got, s.String())
		}
	}
	if metrics.DriveFault != metrics.DriveState(cia402.StateFault) || metrics.DriveOperationEnabled != metrics.DriveState(cia402.StateOperationEnabled) {
		t.Errorf("fault %d / operation enabled %d, cia402 has %d / %d",
			metrics.DriveFault, metrics.DriveOperationEnabled, cia402.StateFault, cia402.StateOperationEnabled)
	}
}

package program

import (
	"testing"

	"github.com/ecagent/ecagent/cycle/rt"
)

// TestRecoveryRT: the recovery worker runs just below the cycle and off
// its core, which the cycle keeps to itself; a cycle on the normal
// scheduler leaves the worker there.
func TestRecoveryRT(t *testing.T) {
	tests := []struct {
		cycle, want rt.Options
	}{
		{rt.Options{Priority: 80, Core: -1, LockMemory: true, DMALatency: true}, rt.Options{Priority: 79, Core: -1}},
		{rt.Options{Priority: 99, Core: 3}, rt.Options{Priority: 98, Core: -1}},
		{rt.Options{Priority: 1, Core: 2}, rt.Options{Priority: 0, Core: -1}},
		{rt.Options{Priority: 0, Core: -1}, rt.Options{Priority: 0, Core: -1}},
	}
	for _, tt := range tests {
		if got := recoveryRT(tt.cycle); got != tt.want {
			t.Errorf("recoveryRT(%+v) = %+v, want %+v", tt.cycle, got, tt.want)
		}
	}
}

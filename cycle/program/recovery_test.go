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
		cycle int
		want  rt.Options
	}{
		{80, rt.Options{Priority: 79, Core: -1}},
		{99, rt.Options{Priority: 98, Core: -1}},
		{1, rt.Options{Priority: 0, Core: -1}},
		{0, rt.Options{Priority: 0, Core: -1}},
	}
	for _, tt := range tests {
		if got := recoveryRT(tt.cycle); got != tt.want {
			t.Errorf("recoveryRT(%d) = %+v, want %+v", tt.cycle, got, tt.want)
		}
	}
}

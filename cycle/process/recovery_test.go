package process

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

// TestRecoveryCollectsWhenDue: the worker collects its garbage only once
// gcAfter bytes were allocated since the last collection, and counts from
// that collection on (a collection stops the world, the cycle with it).
func TestRecoveryCollectsWhenDue(t *testing.T) {
	var allocated uint64
	collections := 0
	r := newRecovererOf(nil, nil, nil)
	r.allocated = func() uint64 { return allocated }
	r.collect = func() { collections++; allocated += 1000 } // a collection allocates a little too
	for _, step := range []struct {
		alloc uint64
		want  int
	}{
		{0, 0},
		{gcAfter - 1, 0},
		{1, 1},           // gcAfter since the start
		{gcAfter - 1, 1}, // counted from the collection's end
		{1000, 2},        // ... which is 1000 bytes later
		{gcAfter / 2, 2},
		{gcAfter * 3, 3},
	} {
		allocated += step.alloc
		r.collectIfDue()
		if collections != step.want {
			t.Fatalf("after %d more bytes (%d in all): %d collections, want %d", step.alloc, allocated, collections, step.want)
		}
	}
	if allocatedBytes() == 0 {
		t.Error("runtime/metrics reports no bytes allocated")
	}
}

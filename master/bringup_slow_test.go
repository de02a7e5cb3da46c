package master_test

import (
	"context"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
)

// TestBringUpOnASlowHost brings a segment up whose every answer comes 12
// ms late — a host so loaded that the segment (or the simulator serving
// it) answers long after the configured 2 ms per frame and the 1 ms of a
// cycle. Every try of a frame waits twice as long as the one before and
// takes the late answer of an earlier try, and the waits follow the
// round trip measured: bring-up reaches OP (before, each frame's four
// tries of 2 ms ended before its first answer arrived).
func TestBringUpOnASlowHost(t *testing.T) {
	b := newBench(t, []string{"EK1100", "EL2004"},
		master.Config{Timeout: 2 * time.Millisecond, CycleTimeout: time.Millisecond, SIITimeout: time.Second})
	const late = 12 * time.Millisecond
	b.seg.Faults().Delay(late, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	if err := b.m.BringUp(ctx); err != nil {
		t.Fatalf("BringUp with every answer %v late: %v", late, err)
	}
	st := b.m.Stats()
	t.Logf("in OP after %v: %d answers delayed, %d tries sent again, %d answers stale",
		time.Since(start).Round(time.Millisecond), b.seg.Faults().Counts().Delayed, st.Retries, st.StaleFrames)
	for _, s := range b.m.Slaves() {
		if s.State() != esc.StateOp {
			t.Errorf("%v in %v after bring-up", s, s.State())
		}
	}
}

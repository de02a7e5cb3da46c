package spikes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicy names a task's scheduling by the priority the trace saw,
// which /proc may no longer tell: a task that raised itself to SCHED_FIFO
// for a while and dropped back is FIFO in the spike it made then.
func TestPolicy(t *testing.T) {
	proc := t.TempDir()
	stat := func(pid, policy string) {
		dir := filepath.Join(proc, pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// proc(5): policy is field 41, rt_priority field 40.
		line := pid + " (x) S" + strings.Repeat(" 0", 39-3) + " " + policy + " 0\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat("10", "0 0")  // now SCHED_OTHER
	stat("11", "50 2") // SCHED_RR 50
	stat("12", "0 3")  // SCHED_BATCH
	r := newResolver(proc, nil)
	for _, c := range []struct {
		pid, prio int32
		want      string
	}{
		{10, 9, "FIFO 90"},        // FIFO 90 when traced, OTHER since
		{10, 120, "OTHER nice 0"}, // OTHER then and now
		{11, 49, "RR 50"},
		{12, 125, "BATCH nice 5"},
		{13, 19, "FIFO 80"}, // gone: the trace's priority says
		{13, -1, "DEADLINE"},
		{13, 130, "OTHER nice 10"},
	} {
		if got := r.policy(c.pid, c.prio); got != c.want {
			t.Errorf("policy(%d, %d) = %q, want %q", c.pid, c.prio, got, c.want)
		}
	}
}

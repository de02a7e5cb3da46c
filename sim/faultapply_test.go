package sim

import (
	"errors"
	"testing"

	"github.com/ecagent/ecagent/sim/faultcmd"
)

// TestApplyFaultCommands carries out parsed fault commands on a segment
// and reads back their counts.
func TestApplyFaultCommands(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004", "EL3204"})
	f := seg.Faults()
	run := func(line string) (string, error) {
		t.Helper()
		c, err := faultcmd.Parse(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		return f.Apply(c)
	}
	for _, line := range []string{"seed 3", "drop next 2", "corrupt wkc 1", "disappear 2", "offset 0 100", "drift 0 10"} {
		if out, err := run(line); err != nil || out != "" {
			t.Fatalf("%q: %q, %v", line, out, err)
		}
	}
	lostAt(answeredLogical(t, seg, 4))
	if _, err := run("alerror 1 0x1b"); !errors.Is(err, ErrNoApplication) {
		t.Errorf("alerror on an EL2004: %v", err)
	}
	if _, err := run("link down"); !errors.Is(err, ErrNotSegmentFault) {
		t.Errorf("link down: %v", err)
	}
	out, err := run("counts")
	want := "dropped=2 delayed=0 corrupted_wkc=1 corrupted_length=0 disappeared=1 returned=0 al_errors=0 " +
		"drift_jumps=1 offset_jumps=1 frames=4 answered=2 unanswered=2 link_errors=0"
	if err != nil || out != want {
		t.Errorf("counts:\n got %q\nwant %q", out, want)
	}
}

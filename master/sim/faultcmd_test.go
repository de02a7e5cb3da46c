package sim

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseFaultCommand(t *testing.T) {
	tests := []struct {
		line string
		want FaultCommand
		err  string
	}{
		{"drop percent 2.5", FaultCommand{Op: FaultDropPercent, Percent: 2.5}, ""},
		{"DROP Every 10", FaultCommand{Op: FaultDropEvery, N: 10}, ""},
		{"drop next 3", FaultCommand{Op: FaultDropNext, N: 3}, ""},
		{"  drop   off ", FaultCommand{Op: FaultDropOff}, ""},
		{"delay 3ms", FaultCommand{Op: FaultDelay, Min: 3 * time.Millisecond, Max: 3 * time.Millisecond, N: 1}, ""},
		{"delay 1.5ms every 4", FaultCommand{Op: FaultDelay, Min: 1500 * time.Microsecond, Max: 1500 * time.Microsecond, N: 4}, ""},
		{"delay random 1ms 5ms", FaultCommand{Op: FaultDelayRandom, Min: time.Millisecond, Max: 5 * time.Millisecond, N: 1}, ""},
		{"delay random 1ms 5ms every 2", FaultCommand{Op: FaultDelayRandom, Min: time.Millisecond, Max: 5 * time.Millisecond, N: 2}, ""},
		{"delay off", FaultCommand{Op: FaultDelayOff}, ""},
		{"corrupt wkc 2", FaultCommand{Op: FaultCorruptWKC, N: 2}, ""},
		{"corrupt length 1", FaultCommand{Op: FaultCorruptLength, N: 1}, ""},
		{"disappear 3", FaultCommand{Op: FaultDisappear, Pos: 3}, ""},
		{"return 0", FaultCommand{Op: FaultReturn, Pos: 0}, ""},
		{"alerror 2 0x001B", FaultCommand{Op: FaultALError, Pos: 2, Code: 0x001B}, ""},
		{"alerror 2 27", FaultCommand{Op: FaultALError, Pos: 2, Code: 27}, ""},
		{"drift 1 -80.5", FaultCommand{Op: FaultDrift, Pos: 1, PPM: -80.5}, ""},
		{"offset 4 -1500", FaultCommand{Op: FaultOffset, Pos: 4, NS: -1500}, ""},
		{"link down", FaultCommand{Op: FaultLinkDown}, ""},
		{"link UP", FaultCommand{Op: FaultLinkUp}, ""},
		{"counts", FaultCommand{Op: FaultShowCounts}, ""},
		{"seed 42", FaultCommand{Op: FaultSeed, Seed: 42}, ""},

		{"", FaultCommand{}, "empty command"},
		{"explode 3", FaultCommand{}, `unknown command "explode"`},
		{"drop", FaultCommand{}, "drop: missing one of percent, every, next, off"},
		{"drop sometimes", FaultCommand{}, `drop: "sometimes" is not one of percent, every, next, off`},
		{"drop percent 101", FaultCommand{}, `drop: percentage "101": want a number from 0 to 100`},
		{"drop percent NaN", FaultCommand{}, `drop: percentage "NaN": want a number from 0 to 100`},
		{"drop every 0", FaultCommand{}, `drop: frame count "0": want a whole number ≥ 1`},
		{"drop next", FaultCommand{}, "drop: missing frame count"},
		{"drop next 2 3", FaultCommand{}, `drop: unexpected "3"`},
		{"drop off now", FaultCommand{}, `drop: unexpected "now"`},
		{"delay", FaultCommand{}, "delay: missing delay"},
		{"delay soon", FaultCommand{}, `delay: delay "soon": want a duration ≥ 0 such as 2ms`},
		{"delay -1ms", FaultCommand{}, `delay: delay "-1ms": want a duration ≥ 0 such as 2ms`},
		{"delay 2ms each 3", FaultCommand{}, `delay: unexpected "each" (want every N)`},
		{"delay 2ms every", FaultCommand{}, "delay: missing answer count"},
		{"delay random 5ms 1ms", FaultCommand{}, "delay: maximum delay 1ms below the minimum 5ms"},
		{"delay random 5ms", FaultCommand{}, "delay: missing maximum delay"},
		{"corrupt crc 1", FaultCommand{}, `corrupt: "crc" is not one of wkc, length`},
		{"disappear", FaultCommand{}, "disappear: missing device position"},
		{"disappear -1", FaultCommand{}, `disappear: device position "-1": want a whole number ≥ 0`},
		{"return 1 2", FaultCommand{}, `return: unexpected "2"`},
		{"alerror 1", FaultCommand{}, "alerror: missing AL status code"},
		{"alerror 1 0x10000", FaultCommand{}, `alerror: AL status code "0x10000": want 0x0000 to 0xFFFF or 0 to 65535`},
		{"alerror 1 017", FaultCommand{}, `alerror: AL status code "017": want 0x0000 to 0xFFFF or 0 to 65535`},
		{"drift 1 2000", FaultCommand{}, `drift: drift in ppm "2000": want a number from -1000 to 1000`},
		{"offset 1 1.5", FaultCommand{}, `offset: offset in ns "1.5": want a whole number`},
		{"link sideways", FaultCommand{}, `link: "sideways" is not one of down, up`},
		{"counts all", FaultCommand{}, `counts: unexpected "all"`},
		{"seed -1", FaultCommand{}, `seed: seed "-1": want a whole number ≥ 0`},
	}
	for _, tt := range tests {
		got, err := ParseFaultCommand(tt.line)
		switch {
		case tt.err != "" && (err == nil || err.Error() != tt.err):
			t.Errorf("%q: error %v, want %q", tt.line, err, tt.err)
		case tt.err == "" && err != nil:
			t.Errorf("%q: %v", tt.line, err)
		case got != tt.want:
			t.Errorf("%q: %+v, want %+v", tt.line, got, tt.want)
		}
	}
}

func TestApplyFaultCommands(t *testing.T) {
	seg := newSeg(t, []string{"EK1100", "EL2004", "EL3204"})
	f := seg.Faults()
	run := func(line string) (string, error) {
		t.Helper()
		c, err := ParseFaultCommand(line)
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

func TestParseFaultSchedule(t *testing.T) {
	good := `# pull terminal 3 and put it back
5s   disappear 3
7.5s return 3   # after 2.5 s
0s   drop percent 1
7.5s alerror 2 0x001B
repeat 10s
`
	s, err := ParseFaultSchedule(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	if s.Repeat != 10*time.Second || len(s.Steps) != 4 {
		t.Fatalf("schedule %+v", s)
	}
	wantAt := []time.Duration{0, 5 * time.Second, 7500 * time.Millisecond, 7500 * time.Millisecond}
	wantLine := []int{4, 2, 3, 5}
	for i, st := range s.Steps {
		if st.At != wantAt[i] || st.Line != wantLine[i] {
			t.Errorf("step %d: at %v line %d, want %v line %d", i, st.At, st.Line, wantAt[i], wantLine[i])
		}
	}
	if s.Steps[2].Cmd != (FaultCommand{Op: FaultReturn, Pos: 3}) {
		t.Errorf("step 2: %+v", s.Steps[2].Cmd)
	}
	bad := []struct {
		text, err string
		line      int
	}{
		{"5s\n", "line 1: missing command after 5s", 1},
		{"\n\nsoon disappear 1\n", `line 3: "soon" is not a time such as 5s or 7.5s (want AT COMMAND)`, 3},
		{"1s disappear\n", "line 1: disappear: missing device position", 1},
		{"1s counts\n", "line 1: counts has no place in a schedule", 1},
		{"repeat\n", "line 1: repeat: want repeat EVERY, e.g. repeat 10s", 1},
		{"repeat 0s\n", `line 1: repeat "0s": want a duration > 0 such as 10s`, 1},
		{"repeat 1s\nrepeat 2s\n", "line 2: second repeat line (the first is line 1)", 2},
		{"repeat 5s\n1s drop off\n5s drop off\n", "line 1: repeat 5s: not longer than the step at 5s on line 3", 1},
	}
	for _, tt := range bad {
		_, err := ParseFaultSchedule(strings.NewReader(tt.text))
		var se *ScheduleError
		if err == nil || err.Error() != tt.err || !errors.As(err, &se) || se.Line != tt.line {
			t.Errorf("%q: error %v, want %q", tt.text, err, tt.err)
		}
	}
}

// TestExampleFaultSchedule parses the schedule shipped in deploy/examples.
func TestExampleFaultSchedule(t *testing.T) {
	f, err := os.Open("../../deploy/examples/faults.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseFaultSchedule(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) != 7 || s.Repeat != 40*time.Second {
		t.Fatalf("%d steps, repeat %v; want 7 and 40s", len(s.Steps), s.Repeat)
	}
}

package faultcmd

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		line string
		want Command
		err  string
	}{
		{"drop percent 2.5", Command{Op: DropPercent, Percent: 2.5}, ""},
		{"DROP Every 10", Command{Op: DropEvery, N: 10}, ""},
		{"drop next 3", Command{Op: DropNext, N: 3}, ""},
		{"  drop   off ", Command{Op: DropOff}, ""},
		{"delay 3ms", Command{Op: Delay, Min: 3 * time.Millisecond, Max: 3 * time.Millisecond, N: 1}, ""},
		{"delay 1.5ms every 4", Command{Op: Delay, Min: 1500 * time.Microsecond, Max: 1500 * time.Microsecond, N: 4}, ""},
		{"delay random 1ms 5ms", Command{Op: DelayRandom, Min: time.Millisecond, Max: 5 * time.Millisecond, N: 1}, ""},
		{"delay random 1ms 5ms every 2", Command{Op: DelayRandom, Min: time.Millisecond, Max: 5 * time.Millisecond, N: 2}, ""},
		{"delay off", Command{Op: DelayOff}, ""},
		{"corrupt wkc 2", Command{Op: CorruptWKC, N: 2}, ""},
		{"corrupt length 1", Command{Op: CorruptLength, N: 1}, ""},
		{"disappear 3", Command{Op: Disappear, Pos: 3}, ""},
		{"return 0", Command{Op: Return, Pos: 0}, ""},
		{"alerror 2 0x001B", Command{Op: ALError, Pos: 2, Code: 0x001B}, ""},
		{"alerror 2 27", Command{Op: ALError, Pos: 2, Code: 27}, ""},
		{"drift 1 -80.5", Command{Op: Drift, Pos: 1, PPM: -80.5}, ""},
		{"offset 4 -1500", Command{Op: Offset, Pos: 4, NS: -1500}, ""},
		{"link down", Command{Op: LinkDown}, ""},
		{"link UP", Command{Op: LinkUp}, ""},
		{"counts", Command{Op: ShowCounts}, ""},
		{"seed 42", Command{Op: Seed, Seed: 42}, ""},

		{"", Command{}, "empty command"},
		{"explode 3", Command{}, `unknown command "explode"`},
		{"drop", Command{}, "drop: missing one of percent, every, next, off"},
		{"drop sometimes", Command{}, `drop: "sometimes" is not one of percent, every, next, off`},
		{"drop percent 101", Command{}, `drop: percentage "101": want a number from 0 to 100`},
		{"drop percent NaN", Command{}, `drop: percentage "NaN": want a number from 0 to 100`},
		{"drop every 0", Command{}, `drop: frame count "0": want a whole number ≥ 1`},
		{"drop next", Command{}, "drop: missing frame count"},
		{"drop next 2 3", Command{}, `drop: unexpected "3"`},
		{"drop off now", Command{}, `drop: unexpected "now"`},
		{"delay", Command{}, "delay: missing delay"},
		{"delay soon", Command{}, `delay: delay "soon": want a duration ≥ 0 such as 2ms`},
		{"delay -1ms", Command{}, `delay: delay "-1ms": want a duration ≥ 0 such as 2ms`},
		{"delay 2ms each 3", Command{}, `delay: unexpected "each" (want every N)`},
		{"delay 2ms every", Command{}, "delay: missing answer count"},
		{"delay random 5ms 1ms", Command{}, "delay: maximum delay 1ms below the minimum 5ms"},
		{"delay random 5ms", Command{}, "delay: missing maximum delay"},
		{"corrupt crc 1", Command{}, `corrupt: "crc" is not one of wkc, length`},
		{"disappear", Command{}, "disappear: missing device position"},
		{"disappear -1", Command{}, `disappear: device position "-1": want a whole number ≥ 0`},
		{"return 1 2", Command{}, `return: unexpected "2"`},
		{"alerror 1", Command{}, "alerror: missing AL status code"},
		{"alerror 1 0x10000", Command{}, `alerror: AL status code "0x10000": want 0x0000 to 0xFFFF or 0 to 65535`},
		{"alerror 1 017", Command{}, `alerror: AL status code "017": want 0x0000 to 0xFFFF or 0 to 65535`},
		{"drift 1 2000", Command{}, `drift: drift in ppm "2000": want a number from -1000 to 1000`},
		{"offset 1 1.5", Command{}, `offset: offset in ns "1.5": want a whole number`},
		{"link sideways", Command{}, `link: "sideways" is not one of down, up`},
		{"counts all", Command{}, `counts: unexpected "all"`},
		{"seed -1", Command{}, `seed: seed "-1": want a whole number ≥ 0`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.line)
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

func TestParseSchedule(t *testing.T) {
	good := `# pull terminal 3 and put it back
5s   disappear 3
7.5s return 3   # after 2.5 s
0s   drop percent 1
7.5s alerror 2 0x001B
repeat 10s
`
	s, err := ParseSchedule(strings.NewReader(good))
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
	if s.Steps[2].Cmd != (Command{Op: Return, Pos: 3}) {
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
		_, err := ParseSchedule(strings.NewReader(tt.text))
		var se *ScheduleError
		if err == nil || err.Error() != tt.err || !errors.As(err, &se) || se.Line != tt.line {
			t.Errorf("%q: error %v, want %q", tt.text, err, tt.err)
		}
	}
}

// TestExampleSchedule parses the schedule shipped in deploy/examples.
func TestExampleSchedule(t *testing.T) {
	f, err := os.Open("../../deploy/examples/faults.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ParseSchedule(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Steps) != 7 || s.Repeat != 40*time.Second {
		t.Fatalf("%d steps, repeat %v; want 7 and 40s", len(s.Steps), s.Repeat)
	}
}

// TestParseNoisy parses the commands of noisy cables and power cycles,
// alone and in a schedule.
func TestParseNoisy(t *testing.T) {
	for _, tc := range []struct {
		line string
		want Command
		err  string
	}{
		{"noisy 3 1 12.5", Command{Op: Noisy, Pos: 3, Port: 1, Rate: 12.5}, ""},
		{"POWER-CYCLE", Command{Op: PowerCycle}, ""},
		{"noisy 3 4 1", Command{}, `noisy: port "4": want 0 to 3`},
		{"noisy 3 1", Command{}, "noisy: missing rate in errors a second"},
		{"power-cycle 2", Command{}, `power-cycle: unexpected "2"`},
	} {
		got, err := Parse(tc.line)
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%q: error %v, want %q", tc.line, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("%q: %+v, %v; want %+v", tc.line, got, err, tc.want)
		}
	}
	s, err := ParseSchedule(strings.NewReader("1s noisy 1 0 100\n3s noisy 1 0 0\n"))
	if err != nil || len(s.Steps) != 2 || s.Steps[0].Cmd.Op != Noisy || s.Steps[1].Cmd.Rate != 0 {
		t.Errorf("schedule: %+v, %v", s, err)
	}
}

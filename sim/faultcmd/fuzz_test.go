package faultcmd

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// commandSeeds are lines of the fault command language, good and bad.
var commandSeeds = []string{
	"drop percent 12.5", "drop every 10", "drop next 3", "drop off", "DROP OFF",
	"delay 3ms", "delay 3ms every 10", "delay random 1ms 2ms", "delay random 1ms 2ms every 4", "delay off",
	"corrupt wkc 2", "corrupt length 1", "disappear 3", "return 3", "alerror 2 0x001B", "alerror 2 27",
	"drift 1 -12.5", "offset 1 -1000000", "link down", "link up", "counts", "seed 42",
	"", "drop", "drop percent 101", "delay random 2ms 1ms", "delay -1ms", "alerror 2 010", "alerror 1 0x10000",
	"disappear -1", "counts now", "drift 0 NaN", "bogus 1",
}

// FuzzParse: Parse never panics; a refusal comes with the zero Command
// and an error that names the command (or says it is empty or unknown); an
// accepted command has every field within the bounds the language gives,
// and formatting it back into the language parses to the same command.
func FuzzParse(f *testing.F) {
	for _, s := range commandSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := Parse(line)
		if err != nil {
			if c != (Command{}) {
				t.Fatalf("error %v with %+v", err, c)
			}
			w := strings.Fields(line)
			msg := err.Error()
			switch {
			case len(w) == 0:
				if msg != "empty command" {
					t.Fatalf("blank line: %q", msg)
				}
			case strings.HasPrefix(msg, "unknown command "):
				if msg != fmt.Sprintf("unknown command %q", strings.ToLower(w[0])) {
					t.Fatalf("%q: %q", line, msg)
				}
			case !strings.HasPrefix(msg, strings.ToLower(w[0])+": ") || len(msg) <= len(w[0])+2:
				t.Fatalf("%q: the error %q does not name the command", line, msg)
			}
			return
		}
		if problem := commandProblem(c); problem != "" {
			t.Fatalf("%q = %+v: %s", line, c, problem)
		}
		text := formatCommand(c)
		again, err := Parse(text)
		if err != nil || again != c {
			t.Fatalf("%q = %+v, formatted %q, parses to %+v, %v", line, c, text, again, err)
		}
	})
}

// FuzzParseSchedule: ParseSchedule never panics; a bad line is a
// *ScheduleError with its 1-based line number; an accepted schedule is in
// time order, holds no counts and repeats only after its last step.
func FuzzParseSchedule(f *testing.F) {
	f.Add("# outage\n5s disappear 3\n7.5s return 3\nrepeat 10s\n")
	f.Add("0s drop percent 5\n1s drop off\n1s delay 2ms every 3\n")
	f.Add("repeat 1s\n2s link down\n")
	f.Add("1s counts\n")
	f.Add("x drop off\n")
	f.Add("repeat 1s\nrepeat 2s\n")
	f.Add("1s\n")
	for _, s := range commandSeeds {
		f.Add("1s " + s + "\n")
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSchedule(strings.NewReader(text))
		if err != nil {
			var se *ScheduleError
			if errors.As(err, &se) {
				if se.Line < 1 || se.Line > strings.Count(text, "\n")+1 || !strings.HasPrefix(err.Error(), fmt.Sprintf("line %d: ", se.Line)) {
					t.Fatalf("%v: line %d of a %d-line text", err, se.Line, strings.Count(text, "\n")+1)
				}
			} else if !strings.HasPrefix(err.Error(), "reading fault schedule: ") {
				t.Fatalf("an error that names no line: %v", err)
			}
			if s.Repeat != 0 || len(s.Steps) != 0 {
				t.Fatalf("error %v with %+v", err, s)
			}
			return
		}
		for i, st := range s.Steps {
			if st.Cmd.Op == ShowCounts || st.At < 0 || st.Line < 1 || (i > 0 && st.At < s.Steps[i-1].At) {
				t.Fatalf("step %d: %+v", i, st)
			}
			if problem := commandProblem(st.Cmd); problem != "" {
				t.Fatalf("step %d: %+v: %s", i, st, problem)
			}
		}
		if s.Repeat < 0 || (s.Repeat > 0 && len(s.Steps) > 0 && s.Steps[len(s.Steps)-1].At >= s.Repeat) {
			t.Fatalf("repeat %v with steps %+v", s.Repeat, s.Steps)
		}
	})
}

// commandProblem says which field of c is outside what the language
// allows, or "".
func commandProblem(c Command) string {
	switch c.Op {
	case DropEvery, DropNext, CorruptWKC, CorruptLength, Delay, DelayRandom:
		if c.N < 1 {
			return "N < 1"
		}
	}
	switch {
	case c.Op < DropPercent || c.Op > PowerCycle:
		return "unknown op"
	case c.Percent < 0 || c.Percent > 100:
		return "percent outside 0..100"
	case c.Min < 0 || c.Max < c.Min:
		return "delays out of order"
	case c.Pos < 0:
		return "negative position"
	case c.Port < 0 || c.Port > 3 || c.Rate < 0 || c.Rate > MaxNoiseRate || c.Rate != c.Rate:
		return "noise out of range"
	case c.PPM < -MaxDriftPPM || c.PPM > MaxDriftPPM || c.PPM != c.PPM:
		return "drift out of range"
	}
	return ""
}

// formatCommand writes c in the fault command language.
func formatCommand(c Command) string {
	float := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	every := func(n int) string {
		if n == 1 {
			return ""
		}
		return " every " + strconv.Itoa(n)
	}
	d := func(v time.Duration) string { return v.String() }
	switch c.Op {
	case DropPercent:
		return "drop percent " + float(c.Percent)
	case DropEvery:
		return "drop every " + strconv.Itoa(c.N)
	case DropNext:
		return "drop next " + strconv.Itoa(c.N)
	case DropOff:
		return "drop off"
	case Delay:
		return "delay " + d(c.Min) + every(c.N)
	case DelayRandom:
		return "delay random " + d(c.Min) + " " + d(c.Max) + every(c.N)
	case DelayOff:
		return "delay off"
	case CorruptWKC:
		return "corrupt wkc " + strconv.Itoa(c.N)
	case CorruptLength:
		return "corrupt length " + strconv.Itoa(c.N)
	case Disappear:
		return "disappear " + strconv.Itoa(c.Pos)
	case Return:
		return "return " + strconv.Itoa(c.Pos)
	case ALError:
		return fmt.Sprintf("alerror %d 0x%04X", c.Pos, c.Code)
	case Drift:
		return fmt.Sprintf("drift %d %s", c.Pos, float(c.PPM))
	case Offset:
		return fmt.Sprintf("offset %d %d", c.Pos, c.NS)
	case LinkDown:
		return "link down"
	case LinkUp:
		return "link up"
	case ShowCounts:
		return "counts"
	case Seed:
		return "seed " + strconv.FormatUint(c.Seed, 10)
	case Noisy:
		return fmt.Sprintf("noisy %d %d %s", c.Pos, c.Port, float(c.Rate))
	case PowerCycle:
		return "power-cycle"
	}
	return fmt.Sprintf("op%d", c.Op)
}

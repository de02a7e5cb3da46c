// Package faultcmd is the text language of the simulated segment's faults:
// one command a line, as `ecagent sim --control` takes them on its socket
// and as the steps of a `--faults` schedule file give them (AT COMMAND),
// parsed into Commands for the simulator (sim.Faults.Apply) and its
// caller to carry out. It depends on the standard library only, so that its
// fuzz targets link only the parser and run fast.
package faultcmd

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxDriftPPM is the largest clock drift, in ppm either way, a simulated
// device takes: the drift command refuses more, and the simulator clamps
// larger values to it. Real quartz oscillators stay within ±100 ppm; the
// ESC's control loop slews by at most about 787 ppm.
const MaxDriftPPM = 1000.0

// MaxNoiseRate is the highest rate of the noisy command, in errors a
// second: one error a microsecond.
const MaxNoiseRate = 1_000_000

// Op names a fault command.
type Op int

// The fault commands; see Parse for their text form.
const (
	DropPercent   Op = iota + 1 // drop percent P
	DropEvery                   // drop every N
	DropNext                    // drop next N
	DropOff                     // drop off
	Delay                       // delay D [every N]
	DelayRandom                 // delay random MIN MAX [every N]
	DelayOff                    // delay off
	CorruptWKC                  // corrupt wkc N
	CorruptLength               // corrupt length N
	Disappear                   // disappear POS
	Return                      // return POS
	ALError                     // alerror POS CODE
	Drift                       // drift POS PPM
	Offset                      // offset POS NS
	LinkDown                    // link down (the caller's interface)
	LinkUp                      // link up
	ShowCounts                  // counts
	Seed                        // seed N
	Noisy                       // noisy POS PORT RATE
	PowerCycle                  // power-cycle
)

// Command is one parsed fault command (Parse). Only the fields its Op
// uses are set.
type Command struct {
	Op       Op
	N        int           // drop every/next, corrupt, every of delay (≥ 1)
	Pos      int           // ring position of the device
	Percent  float64       // drop percent
	Min, Max time.Duration // delay (Min == Max for a fixed delay)
	Code     uint16        // AL status code
	PPM      float64       // drift
	NS       int64         // offset step
	Seed     uint64        // seed
	Port     int           // port of the device (noisy)
	Rate     float64       // errors a second (noisy)
}

// Help is the fault command language, one command a line, for help
// texts.
const Help = `  drop percent P            lose each frame with probability P % (seeded, see seed)
  drop every N              lose every Nth frame
  drop next N               lose exactly the next N frames
  drop off                  stop losing frames
  delay D [every N]         hold back (every Nth) answer by D, e.g. delay 3ms every 10
  delay random MIN MAX [every N]
                            the same with a random delay from MIN to MAX
  delay off                 stop delaying answers
  corrupt wkc N             the next N answers carry a working counter one too high
  corrupt length N          the next N answers have a bad datagram length (malformed)
  disappear POS             the device at ring position POS (0 first) loses power
  return POS                it powers up again: INIT, station address 0, registers reset
  alerror POS CODE          its application drops to SAFEOP+ERR with AL status code CODE (0x001B or 27)
  drift POS PPM             its clock's drift becomes PPM ppm
  offset POS NS             its clock steps by NS ns
  noisy POS PORT RATE       the cable at port PORT (0 towards the master, 1 onwards) of the
                            device at POS gets RATE CRC errors a second (0: quiet again);
                            damaged frames are lost and counted in 0x0300-0x030C
  power-cycle               every device loses power and comes back: INIT, registers and
                            station addresses reset, EEPROM contents (alias) kept
  link down | link up       set the simulator's interface down or up (CAP_NET_ADMIN;
                            on a veth pair the master's end loses its carrier)
  counts                    one line of key=value counts of the faults applied
  seed N                    restart the random sequence of drop percent and delay random`

// Parse parses one command of the fault command language (Help): words
// separated by blanks, keywords in any case, durations as Go writes them
// (1.5ms, 2s), numbers in decimal (AL status codes also in hex with 0x).
// A refused line gives the zero Command and an error that names the
// command.
func Parse(line string) (Command, error) {
	w := strings.Fields(line)
	if len(w) == 0 {
		return Command{}, errors.New("empty command")
	}
	for i := range w {
		if i < 2 {
			w[i] = strings.ToLower(w[i])
		}
	}
	parse, ok := commands[w[0]]
	if !ok {
		return Command{}, fmt.Errorf("unknown command %q", w[0])
	}
	p := cmdParser{words: w}
	var c Command
	parse(&p, &c)
	if p.err != nil {
		return Command{}, p.err
	}
	return c, nil
}

// commands parse the words of a command into c, by its first word; the
// parser records the first error.
var commands = map[string]func(p *cmdParser, c *Command){
	"drop":    parseDrop,
	"delay":   parseDelay,
	"corrupt": parseCorrupt,
	"disappear": func(p *cmdParser, c *Command) {
		c.Op, c.Pos = Disappear, p.position(1)
		p.args(2)
	},
	"return": func(p *cmdParser, c *Command) {
		c.Op, c.Pos = Return, p.position(1)
		p.args(2)
	},
	"alerror": func(p *cmdParser, c *Command) {
		c.Op, c.Pos = ALError, p.position(1)
		c.Code = p.code(2)
		p.args(3)
	},
	"drift": func(p *cmdParser, c *Command) {
		c.Op, c.Pos = Drift, p.position(1)
		c.PPM = p.float(2, "drift in ppm", -MaxDriftPPM, MaxDriftPPM)
	},
	"offset": func(p *cmdParser, c *Command) {
		c.Op, c.Pos = Offset, p.position(1)
		c.NS = p.int64(2, "offset in ns")
	},
	"link": func(p *cmdParser, c *Command) {
		switch p.sub("down", "up") {
		case "down":
			c.Op = LinkDown
		case "up":
			c.Op = LinkUp
		}
		p.args(2)
	},
	"counts": func(p *cmdParser, c *Command) {
		c.Op = ShowCounts
		p.args(1)
	},
	"seed": func(p *cmdParser, c *Command) {
		c.Op = Seed
		c.Seed = p.uint64(1, "seed")
	},
	"noisy": func(p *cmdParser, c *Command) {
		c.Op, c.Pos = Noisy, p.position(1)
		c.Port = p.port(2)
		c.Rate = p.float(3, "rate in errors a second", 0, MaxNoiseRate)
	},
	"power-cycle": func(p *cmdParser, c *Command) {
		c.Op = PowerCycle
		p.args(1)
	},
}

// parseDrop parses drop percent P, drop every N, drop next N, drop off.
func parseDrop(p *cmdParser, c *Command) {
	switch p.sub("percent", "every", "next", "off") {
	case "percent":
		c.Op = DropPercent
		c.Percent = p.float(2, "percentage", 0, 100)
	case "every":
		c.Op, c.N = DropEvery, p.count(2, "frame count")
	case "next":
		c.Op, c.N = DropNext, p.count(2, "frame count")
	case "off":
		c.Op = DropOff
		p.args(2)
	}
}

// parseDelay parses delay D [every N], delay random MIN MAX [every N],
// delay off.
func parseDelay(p *cmdParser, c *Command) {
	w := p.words
	switch {
	case len(w) > 1 && w[1] == "off":
		c.Op = DelayOff
		p.args(2)
	case len(w) > 1 && w[1] == "random":
		c.Op = DelayRandom
		c.Min, c.Max = p.duration(2, "minimum delay"), p.duration(3, "maximum delay")
		c.N = p.every(4)
		if p.err == nil && c.Max < c.Min {
			p.fail("maximum delay %v below the minimum %v", c.Max, c.Min)
		}
	default:
		c.Op = Delay
		c.Min = p.duration(1, "delay")
		c.Max = c.Min
		c.N = p.every(2)
	}
}

// parseCorrupt parses corrupt wkc N, corrupt length N.
func parseCorrupt(p *cmdParser, c *Command) {
	switch p.sub("wkc", "length") {
	case "wkc":
		c.Op, c.N = CorruptWKC, p.count(2, "answer count")
	case "length":
		c.Op, c.N = CorruptLength, p.count(2, "answer count")
	}
}

// cmdParser takes a command's words apart; the first error sticks.
type cmdParser struct {
	words []string
	err   error
}

func (p *cmdParser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%s: "+format, append([]any{p.words[0]}, args...)...)
	}
}

// word returns word i, or fails naming what is missing.
func (p *cmdParser) word(i int, what string) (string, bool) {
	if p.err != nil {
		return "", false
	}
	if i >= len(p.words) {
		p.fail("missing %s", what)
		return "", false
	}
	return p.words[i], true
}

// args fails when the command has more than n words.
func (p *cmdParser) args(n int) {
	if p.err == nil && len(p.words) > n {
		p.fail("unexpected %q", p.words[n])
	}
}

// sub returns word 1 when it is one of the subcommands.
func (p *cmdParser) sub(subs ...string) string {
	w, ok := p.word(1, "one of "+strings.Join(subs, ", "))
	if !ok {
		return ""
	}
	for _, s := range subs {
		if w == s {
			return w
		}
	}
	p.fail("%q is not one of %s", w, strings.Join(subs, ", "))
	return ""
}

// count parses word i as a count ≥ 1, the last word.
func (p *cmdParser) count(i int, what string) int {
	w, ok := p.word(i, what)
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(w)
	if err != nil || n < 1 {
		p.fail("%s %q: want a whole number ≥ 1", what, w)
		return 0
	}
	p.args(i + 1)
	return n
}

// every parses an optional "every N" from word i on, the last words; 1
// without it.
func (p *cmdParser) every(i int) int {
	if p.err != nil || i >= len(p.words) {
		return 1
	}
	if strings.ToLower(p.words[i]) != "every" {
		p.fail("unexpected %q (want every N)", p.words[i])
		return 0
	}
	return p.count(i+1, "answer count")
}

// position parses word i as a ring position.
func (p *cmdParser) position(i int) int {
	w, ok := p.word(i, "device position")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(w)
	if err != nil || n < 0 {
		p.fail("device position %q: want a whole number ≥ 0", w)
		return 0
	}
	return n
}

// port parses word i as an ESC port, 0 to 3.
func (p *cmdParser) port(i int) int {
	w, ok := p.word(i, "port")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(w)
	if err != nil || n < 0 || n > 3 {
		p.fail("port %q: want 0 to 3", w)
		return 0
	}
	return n
}

// duration parses word i as a duration ≥ 0.
func (p *cmdParser) duration(i int, what string) time.Duration {
	w, ok := p.word(i, what)
	if !ok {
		return 0
	}
	d, err := time.ParseDuration(w)
	if err != nil || d < 0 {
		p.fail("%s %q: want a duration ≥ 0 such as 2ms", what, w)
		return 0
	}
	return d
}

// float parses word i as a number in [lo, hi], the last word.
func (p *cmdParser) float(i int, what string, lo, hi float64) float64 {
	w, ok := p.word(i, what)
	if !ok {
		return 0
	}
	v, err := strconv.ParseFloat(w, 64)
	if err != nil || math.IsNaN(v) || v < lo || v > hi {
		p.fail("%s %q: want a number from %g to %g", what, w, lo, hi)
		return 0
	}
	p.args(i + 1)
	return v
}

// int64 parses word i as a whole number, the last word.
func (p *cmdParser) int64(i int, what string) int64 {
	w, ok := p.word(i, what)
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(w, 10, 64)
	if err != nil {
		p.fail("%s %q: want a whole number", what, w)
		return 0
	}
	p.args(i + 1)
	return v
}

// uint64 parses word i as a whole number ≥ 0, the last word.
func (p *cmdParser) uint64(i int, what string) uint64 {
	w, ok := p.word(i, what)
	if !ok {
		return 0
	}
	v, err := strconv.ParseUint(w, 10, 64)
	if err != nil {
		p.fail("%s %q: want a whole number ≥ 0", what, w)
		return 0
	}
	p.args(i + 1)
	return v
}

// code parses word i as an AL status code, hex with 0x or decimal.
func (p *cmdParser) code(i int) uint16 {
	w, ok := p.word(i, "AL status code")
	if !ok {
		return 0
	}
	v, err := strconv.ParseUint(w, 0, 16)
	if err != nil || (len(w) > 1 && w[0] == '0' && w[1] != 'x' && w[1] != 'X') {
		p.fail("AL status code %q: want 0x0000 to 0xFFFF or 0 to 65535", w)
		return 0
	}
	return uint16(v)
}

// Step is one line of a fault schedule: a command and when to run it,
// counted from the start of serving (or of the schedule's round).
type Step struct {
	At   time.Duration
	Cmd  Command
	Line int // line number in the schedule text
}

// Schedule is a parsed fault schedule (ParseSchedule).
type Schedule struct {
	Steps []Step // in the order of At
	// Repeat, when not 0, starts the schedule again every Repeat.
	Repeat time.Duration
}

// ScheduleError is the error of a bad line in a fault schedule.
type ScheduleError struct {
	Line int // 1-based
	Err  error
}

// Error implements error.
func (e *ScheduleError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *ScheduleError) Unwrap() error { return e.Err }

// ParseSchedule parses a fault schedule: one step a line, "AT
// COMMAND" with AT a duration from the start (5s disappear 3, 7.5s return
// 3) and COMMAND in the fault command language; blank lines and text after
// # are ignored; a line "repeat EVERY" makes the schedule start again every
// EVERY, which must be longer than the last step's AT. Steps run in the
// order of AT, lines with the same AT in file order. A bad line is a
// *ScheduleError naming it.
func ParseSchedule(r io.Reader) (Schedule, error) {
	var s Schedule
	repeatLine := 0
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		w := strings.Fields(line)
		if len(w) == 0 {
			continue
		}
		bad := func(format string, args ...any) error {
			return &ScheduleError{Line: n, Err: fmt.Errorf(format, args...)}
		}
		if strings.ToLower(w[0]) == "repeat" {
			if repeatLine != 0 {
				return Schedule{}, bad("second repeat line (the first is line %d)", repeatLine)
			}
			if len(w) != 2 {
				return Schedule{}, bad("repeat: want repeat EVERY, e.g. repeat 10s")
			}
			d, err := time.ParseDuration(w[1])
			if err != nil || d <= 0 {
				return Schedule{}, bad("repeat %q: want a duration > 0 such as 10s", w[1])
			}
			s.Repeat, repeatLine = d, n
			continue
		}
		at, err := time.ParseDuration(w[0])
		if err != nil || at < 0 {
			return Schedule{}, bad("%q is not a time such as 5s or 7.5s (want AT COMMAND)", w[0])
		}
		if len(w) == 1 {
			return Schedule{}, bad("missing command after %s", w[0])
		}
		cmd, err := Parse(strings.Join(w[1:], " "))
		if err != nil {
			return Schedule{}, &ScheduleError{Line: n, Err: err}
		}
		if cmd.Op == ShowCounts {
			return Schedule{}, bad("counts has no place in a schedule")
		}
		s.Steps = append(s.Steps, Step{At: at, Cmd: cmd, Line: n})
	}
	if err := sc.Err(); err != nil {
		return Schedule{}, fmt.Errorf("reading fault schedule: %w", err)
	}
	slices.SortStableFunc(s.Steps, func(a, b Step) int { return cmp.Compare(a.At, b.At) })
	if s.Repeat > 0 && len(s.Steps) > 0 {
		if last := s.Steps[len(s.Steps)-1]; last.At >= s.Repeat {
			return Schedule{}, &ScheduleError{Line: repeatLine,
				Err: fmt.Errorf("repeat %v: not longer than the step at %v on line %d", s.Repeat, last.At, last.Line)}
		}
	}
	return s, nil
}

package sim

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

// FaultOp names a fault command.
type FaultOp int

// The fault commands; see ParseFaultCommand for their text form.
const (
	FaultDropPercent   FaultOp = iota + 1 // drop percent P
	FaultDropEvery                        // drop every N
	FaultDropNext                         // drop next N
	FaultDropOff                          // drop off
	FaultDelay                            // delay D [every N]
	FaultDelayRandom                      // delay random MIN MAX [every N]
	FaultDelayOff                         // delay off
	FaultCorruptWKC                       // corrupt wkc N
	FaultCorruptLength                    // corrupt length N
	FaultDisappear                        // disappear POS
	FaultReturn                           // return POS
	FaultALError                          // alerror POS CODE
	FaultDrift                            // drift POS PPM
	FaultOffset                           // offset POS NS
	FaultLinkDown                         // link down (the caller's interface)
	FaultLinkUp                           // link up
	FaultShowCounts                       // counts
	FaultSeed                             // seed N
	FaultNoisy                            // noisy POS PORT RATE
	FaultPowerCycle                       // power-cycle
)

// FaultCommand is one parsed fault command. Only the fields its Op uses
// are set.
type FaultCommand struct {
	Op       FaultOp
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

// ErrNotSegmentFault is matched by the error Apply returns for link down
// and link up: they act on the network interface, which the caller owns.
var ErrNotSegmentFault = errors.New("sim: not a segment fault (the caller handles it)")

// FaultCommandHelp is the fault command language, one command a line,
// for help texts.
const FaultCommandHelp = `  drop percent P            lose each frame with probability P % (seeded, see seed)
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

// ParseFaultCommand parses one command of the fault command language
// (FaultCommandHelp): words separated by blanks, keywords in any case,
// durations as Go writes them (1.5ms, 2s), numbers in decimal (AL status
// codes also in hex with 0x).
func ParseFaultCommand(line string) (FaultCommand, error) {
	w := strings.Fields(line)
	if len(w) == 0 {
		return FaultCommand{}, errors.New("empty command")
	}
	for i := range w {
		if i < 2 {
			w[i] = strings.ToLower(w[i])
		}
	}
	p := cmdParser{words: w}
	var c FaultCommand
	switch w[0] {
	case "drop":
		switch p.sub("percent", "every", "next", "off") {
		case "percent":
			c.Op = FaultDropPercent
			c.Percent = p.float(2, "percentage", 0, 100)
		case "every":
			c.Op, c.N = FaultDropEvery, p.count(2, "frame count")
		case "next":
			c.Op, c.N = FaultDropNext, p.count(2, "frame count")
		case "off":
			c.Op = FaultDropOff
			p.args(2)
		}
	case "delay":
		switch {
		case len(w) > 1 && w[1] == "off":
			c.Op = FaultDelayOff
			p.args(2)
		case len(w) > 1 && w[1] == "random":
			c.Op = FaultDelayRandom
			c.Min, c.Max = p.duration(2, "minimum delay"), p.duration(3, "maximum delay")
			c.N = p.every(4)
			if p.err == nil && c.Max < c.Min {
				p.fail("maximum delay %v below the minimum %v", c.Max, c.Min)
			}
		default:
			c.Op = FaultDelay
			c.Min = p.duration(1, "delay")
			c.Max = c.Min
			c.N = p.every(2)
		}
	case "corrupt":
		switch p.sub("wkc", "length") {
		case "wkc":
			c.Op, c.N = FaultCorruptWKC, p.count(2, "answer count")
		case "length":
			c.Op, c.N = FaultCorruptLength, p.count(2, "answer count")
		}
	case "disappear":
		c.Op, c.Pos = FaultDisappear, p.position(1)
		p.args(2)
	case "return":
		c.Op, c.Pos = FaultReturn, p.position(1)
		p.args(2)
	case "alerror":
		c.Op, c.Pos = FaultALError, p.position(1)
		c.Code = p.code(2)
		p.args(3)
	case "drift":
		c.Op, c.Pos = FaultDrift, p.position(1)
		c.PPM = p.float(2, "drift in ppm", -MaxClockDrift, MaxClockDrift)
	case "offset":
		c.Op, c.Pos = FaultOffset, p.position(1)
		c.NS = p.int64(2, "offset in ns")
	case "link":
		switch p.sub("down", "up") {
		case "down":
			c.Op = FaultLinkDown
		case "up":
			c.Op = FaultLinkUp
		}
		p.args(2)
	case "counts":
		c.Op = FaultShowCounts
		p.args(1)
	case "seed":
		c.Op = FaultSeed
		c.Seed = p.uint64(1, "seed")
	case "noisy":
		c.Op, c.Pos = FaultNoisy, p.position(1)
		c.Port = p.port(2)
		c.Rate = p.float(3, "rate in errors a second", 0, maxNoiseRate)
	case "power-cycle":
		c.Op = FaultPowerCycle
		p.args(1)
	default:
		return FaultCommand{}, fmt.Errorf("unknown command %q", w[0])
	}
	if p.err != nil {
		return FaultCommand{}, p.err
	}
	return c, nil
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

// Apply carries out a parsed command on the segment. It returns the line
// to answer besides "ok": the counts for FaultShowCounts (fault counts, then
// the segment's frame counters: frames, answered, unanswered, link_errors),
// "" for the others. Link down and link up are the caller's; for them it
// returns ErrNotSegmentFault.
func (f *Faults) Apply(c FaultCommand) (string, error) {
	switch c.Op {
	case FaultDropPercent:
		f.DropPercent(c.Percent)
	case FaultDropEvery:
		f.DropEvery(c.N)
	case FaultDropNext:
		f.DropNext(c.N)
	case FaultDropOff:
		f.DropOff()
	case FaultDelay, FaultDelayRandom:
		f.DelayRandom(c.Min, c.Max, c.N)
	case FaultDelayOff:
		f.DelayOff()
	case FaultCorruptWKC:
		f.CorruptWKC(c.N)
	case FaultCorruptLength:
		f.CorruptLength(c.N)
	case FaultDisappear:
		return "", f.Disappear(c.Pos)
	case FaultReturn:
		return "", f.Return(c.Pos)
	case FaultALError:
		return "", f.ALError(c.Pos, c.Code)
	case FaultDrift:
		return "", f.DriftJump(c.Pos, c.PPM)
	case FaultOffset:
		return "", f.OffsetJump(c.Pos, c.NS)
	case FaultSeed:
		f.SetSeed(c.Seed)
	case FaultNoisy:
		return "", f.Noisy(c.Pos, c.Port, c.Rate)
	case FaultPowerCycle:
		return "", f.PowerCycle()
	case FaultShowCounts:
		st := f.seg.Stats()
		return fmt.Sprintf("%s frames=%d answered=%d unanswered=%d link_errors=%d",
			f.Counts(), st.Frames, st.Answered, st.Dropped, st.LinkErrs), nil
	case FaultLinkDown, FaultLinkUp:
		return "", ErrNotSegmentFault
	default:
		return "", fmt.Errorf("sim: unknown fault command %d", c.Op)
	}
	return "", nil
}

// FaultStep is one line of a fault schedule: a command and when to run it,
// counted from the start of serving (or of the schedule's round).
type FaultStep struct {
	At   time.Duration
	Cmd  FaultCommand
	Line int // line number in the schedule text
}

// FaultSchedule is a parsed fault schedule (ParseFaultSchedule).
type FaultSchedule struct {
	Steps []FaultStep // in the order of At
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

// ParseFaultSchedule parses a fault schedule: one step a line, "AT
// COMMAND" with AT a duration from the start (5s disappear 3, 7.5s return
// 3) and COMMAND in the fault command language; blank lines and text after
// # are ignored; a line "repeat EVERY" makes the schedule start again every
// EVERY, which must be longer than the last step's AT. Steps run in the
// order of AT, lines with the same AT in file order. A bad line is a
// *ScheduleError naming it.
func ParseFaultSchedule(r io.Reader) (FaultSchedule, error) {
	var s FaultSchedule
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
				return FaultSchedule{}, bad("second repeat line (the first is line %d)", repeatLine)
			}
			if len(w) != 2 {
				return FaultSchedule{}, bad("repeat: want repeat EVERY, e.g. repeat 10s")
			}
			d, err := time.ParseDuration(w[1])
			if err != nil || d <= 0 {
				return FaultSchedule{}, bad("repeat %q: want a duration > 0 such as 10s", w[1])
			}
			s.Repeat, repeatLine = d, n
			continue
		}
		at, err := time.ParseDuration(w[0])
		if err != nil || at < 0 {
			return FaultSchedule{}, bad("%q is not a time such as 5s or 7.5s (want AT COMMAND)", w[0])
		}
		if len(w) == 1 {
			return FaultSchedule{}, bad("missing command after %s", w[0])
		}
		cmd, err := ParseFaultCommand(strings.Join(w[1:], " "))
		if err != nil {
			return FaultSchedule{}, &ScheduleError{Line: n, Err: err}
		}
		if cmd.Op == FaultShowCounts {
			return FaultSchedule{}, bad("counts has no place in a schedule")
		}
		s.Steps = append(s.Steps, FaultStep{At: at, Cmd: cmd, Line: n})
	}
	if err := sc.Err(); err != nil {
		return FaultSchedule{}, fmt.Errorf("reading fault schedule: %w", err)
	}
	slices.SortStableFunc(s.Steps, func(a, b FaultStep) int { return cmp.Compare(a.At, b.At) })
	if s.Repeat > 0 && len(s.Steps) > 0 {
		if last := s.Steps[len(s.Steps)-1]; last.At >= s.Repeat {
			return FaultSchedule{}, &ScheduleError{Line: repeatLine,
				Err: fmt.Errorf("repeat %v: not longer than the step at %v on line %d", s.Repeat, last.At, last.Line)}
		}
	}
	return s, nil
}

package bench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Progress shows how far a bench run is: on a terminal a bar redrawn in
// place at most every TerminalRedraw, elsewhere (a log file, CI) one line
// every LineInterval.
type Progress struct {
	w        io.Writer
	total    uint64
	period   time.Duration
	terminal bool
	last     time.Time
	drawn    bool // a bar is on the terminal's current line
}

// How often Progress writes.
const (
	TerminalRedraw = 100 * time.Millisecond
	LineInterval   = 5 * time.Second
)

// progressBarWidth is the width of the bar in characters.
const progressBarWidth = 30

// NewProgress returns a progress display for a run of total cycles of the
// given period, writing to w; terminal selects the redrawn bar (see
// IsTerminal).
func NewProgress(w io.Writer, total uint64, period time.Duration, terminal bool) *Progress {
	return &Progress{w: w, total: max(total, 1), period: period, terminal: terminal}
}

// Update shows that done cycles have run, at time now; it writes only when
// the last write is old enough.
func (p *Progress) Update(done uint64, now time.Time) {
	every := LineInterval
	if p.terminal {
		every = TerminalRedraw
	}
	first := p.last.IsZero()
	switch {
	case first && !p.terminal:
		p.last = now // the first line after one interval, not at once
		return
	case !first && now.Sub(p.last) < every:
		return
	}
	p.last = now
	done = min(done, p.total)
	frac := float64(done) / float64(p.total)
	left := time.Duration(p.total-done) * p.period
	if p.terminal {
		n := int(frac * progressBarWidth)
		fmt.Fprintf(p.w, "\r\x1b[K[%s%s] %5.1f %%  %d/%d cycles  %s left",
			strings.Repeat("#", n), strings.Repeat("-", progressBarWidth-n), 100*frac, done, p.total, roundLeft(left))
		p.drawn = true
		return
	}
	fmt.Fprintf(p.w, "bench: %d of %d cycles (%.0f %%), %s left\n", done, p.total, 100*frac, roundLeft(left))
}

// Done removes the bar from the terminal before the report is printed.
func (p *Progress) Done() {
	if p.terminal && p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

func roundLeft(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}

// IsTerminal reports whether w is a terminal (it has a file descriptor
// with terminal attributes).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

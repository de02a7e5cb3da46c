package replay

import (
	"fmt"
	"slices"

	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/sim"
)

// Clock is the virtual clock a replay drives a segment with: the time the
// devices saw the frame being replayed, in ns since the capture's first
// frame.
type Clock struct{ now int64 }

// Now returns the clock's time in ns.
func (c *Clock) Now() int64 { return c.now }

// Set moves the clock to t; it never goes backwards.
func (c *Clock) Set(t int64) { c.now = max(c.now, t) }

// Options configure a replay.
type Options struct {
	// Setup, if not nil, presets the segment before the replay (see
	// sim.Segment.Preset); Run uses Capture.MidSession when it is nil.
	Setup *Setup
	// Segment are further segment options (the clock is the replay's).
	Segment []sim.Option
	// Examples is how many mismatches each group keeps (default 1).
	Examples int
}

// Run replays every exchange of c against a new segment of devices (which
// become the segment's: build new ones for another run), on a virtual
// clock set to the middle of each exchange's capture times, and compares
// each answer with the real one. A capture without timestamps (simple packet blocks) runs
// with the clock standing still: every time-based behaviour then waits.
func Run(c *Capture, devices []*sim.Device, o Options) (*Result, error) {
	var clk Clock
	seg := sim.NewSegment(devices, append(slices.Clone(o.Segment), sim.WithClock(clk.Now))...)
	setup, mid := c.MidSession()
	if o.Setup != nil {
		setup, mid = *o.Setup, o.Setup.FirstStation != 0
	}
	if mid {
		if err := seg.Preset(setup.FirstStation, setup.State); err != nil {
			return nil, fmt.Errorf("replay: preset %#04x %v: %w", setup.FirstStation, setup.State, err)
		}
	}
	r := &Result{Lost: c.Lost, Strays: c.Strays, examples: max(o.Examples, 1)}
	if mid {
		r.Setup = &setup
	}
	buf := make([]byte, wire.MaxFrameLen)
	for n, ex := range c.Exchanges {
		// The devices saw the frame between the master sending it and
		// its answer being captured: the midpoint is the best estimate
		// (frames are processed in the order the master sent them, and
		// the clock never goes back).
		clk.Set(ex.Sent + (ex.Returned-ex.Sent)/2)
		frame := buf[:copy(buf, ex.Request)]
		answered := seg.Process(frame)
		var got []wire.Datagram
		if answered {
			got = datagrams(frame)
		}
		want := datagrams(ex.Answer)
		r.compare(n, &ex, want, got, undefinedBytes(seg, ex.Request, want))
	}
	r.sortGroups()
	return r, nil
}

// undefinedBytes returns, per answered datagram, which of its bytes no
// model can know (sim.Segment.UndefinedBytes), or nil where all are
// defined.
func undefinedBytes(seg *sim.Segment, request []byte, want []wire.Datagram) [][]bool {
	sent := datagrams(request)
	var out [][]bool
	for k := range want {
		if k >= len(sent) {
			break
		}
		u := make([]bool, len(want[k].Data))
		if seg.UndefinedBytes(&sent[k], want[k].Data, u) == 0 {
			continue
		}
		if out == nil {
			out = make([][]bool, len(want))
		}
		out[k] = u
	}
	return out
}

// IsTimeRegister tells the datagrams compared on their working counter
// only: physical accesses touching 0x0900–0x09FF (receive times, system
// time, SYNC and latch times, which depend on when the devices powered up)
// except the SYNC/latch configuration at 0x0980–0x0981. The rule is the
// one of the project's Python scorer, replay_fidelity.py.
func IsTimeRegister(d *wire.Datagram) bool {
	if d.Command.Addressing() == wire.AddressingLogical {
		return false
	}
	lo, hi := int(d.ADO()), int(d.ADO())+len(d.Data)
	return lo < 0x0A00 && hi > 0x0900 && !(0x0980 <= lo && hi <= 0x0982)
}

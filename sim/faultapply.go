package sim

import (
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/sim/faultcmd"
)

// ErrNotSegmentFault is matched by the error Apply returns for link down
// and link up: they act on the network interface, which the caller owns.
var ErrNotSegmentFault = errors.New("sim: not a segment fault (the caller handles it)")

// Apply carries out a parsed fault command (faultcmd.Parse) on the
// segment. It returns the line to answer besides "ok": the counts for
// faultcmd.ShowCounts (fault counts, then the segment's frame counters:
// frames, answered, unanswered, link_errors), "" for the others. Link down
// and link up are the caller's; for them it returns ErrNotSegmentFault.
func (f *Faults) Apply(c faultcmd.Command) (string, error) {
	switch c.Op {
	case faultcmd.DropPercent:
		f.DropPercent(c.Percent)
	case faultcmd.DropEvery:
		f.DropEvery(c.N)
	case faultcmd.DropNext:
		f.DropNext(c.N)
	case faultcmd.DropOff:
		f.DropOff()
	case faultcmd.Delay, faultcmd.DelayRandom:
		f.DelayRandom(c.Min, c.Max, c.N)
	case faultcmd.DelayOff:
		f.DelayOff()
	case faultcmd.CorruptWKC:
		f.CorruptWKC(c.N)
	case faultcmd.CorruptLength:
		f.CorruptLength(c.N)
	case faultcmd.Disappear:
		return "", f.Disappear(c.Pos)
	case faultcmd.Return:
		return "", f.Return(c.Pos)
	case faultcmd.ALError:
		return "", f.ALError(c.Pos, c.Code)
	case faultcmd.Drift:
		return "", f.DriftJump(c.Pos, c.PPM)
	case faultcmd.Offset:
		return "", f.OffsetJump(c.Pos, c.NS)
	case faultcmd.Seed:
		f.SetSeed(c.Seed)
	case faultcmd.Noisy:
		return "", f.Noisy(c.Pos, c.Port, c.Rate)
	case faultcmd.PowerCycle:
		return "", f.PowerCycle()
	case faultcmd.ShowCounts:
		st := f.seg.Stats()
		return fmt.Sprintf("%s frames=%d answered=%d unanswered=%d link_errors=%d",
			f.Counts(), st.Frames, st.Answered, st.Dropped, st.LinkErrs), nil
	case faultcmd.LinkDown, faultcmd.LinkUp:
		return "", ErrNotSegmentFault
	default:
		return "", fmt.Errorf("sim: unknown fault command %d", c.Op)
	}
	return "", nil
}

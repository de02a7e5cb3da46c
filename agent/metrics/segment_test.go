package metrics

import (
	"testing"

	"github.com/ecagent/ecagent/agent/cyclestats"
)

// TestSegmentCounters checks that the counters the segment holds as
// running totals (ring drops, frames sent, lost and late, the link's frames
// received and dropped by the kernel) never go backwards
// when the agent attaches to a new segment (Restart), and move apart.
func TestSegmentCounters(t *testing.T) {
	steps := []struct {
		restart   bool // a new segment before this total
		set, want uint64
	}{
		{false, 0, 0}, {false, 5, 5}, {false, 5, 5}, {false, 12, 12},
		{true, 2, 14}, // new segment: 12 from the old one + 2
		{false, 3, 15},
		{true, 0, 15}, // another new segment
		{false, 1, 16},
	}
	for set := range cyclestats.NumCounters {
		if !set.Segment() {
			continue
		}
		t.Run(set.String(), func(t *testing.T) {
			r := newTestRegistry(t, testOptions())
			c := r.Consumer()
			for _, s := range steps {
				if s.restart {
					c.Restart()
				}
				c.SetSegment(segment(set, s.set))
				for k := range cyclestats.NumCounters {
					if !k.Segment() {
						continue
					}
					want := uint64(0)
					if k == set {
						want = s.want
					}
					if got := family(t, r, CounterName(k)).GetMetric()[0].GetCounter().GetValue(); got != float64(want) {
						t.Errorf("after setting %s to %d: %s is %g, want %d", set, s.set, k, got, want)
					}
				}
			}
		})
	}
}

// segment returns the segment totals that hold n for counter c and 0 for
// the others.
func segment(c cyclestats.Counter, n uint64) cyclestats.SegmentCounts {
	var s cyclestats.SegmentCounts
	s[c] = n
	return s
}

// totals returns the segment totals of the frames sent and lost and the
// ring drops.
func totals(sent, lost, drops uint64) cyclestats.SegmentCounts {
	var s cyclestats.SegmentCounts
	s[cyclestats.CounterFramesSent], s[cyclestats.CounterFramesLost], s[cyclestats.CounterRingDrops] = sent, lost, drops
	return s
}

// TestWindowFrames: a window reports the frames sent and lost, and the
// samples the ring dropped, since the last window closed, also across a
// new segment (Restart), whose totals start again from 0 — frames lost
// included, though its new total (10) has passed the old one (3).
func TestWindowFrames(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	c := r.Consumer()
	for _, step := range []struct {
		restart                       bool   // a new segment before this window's end
		sent, lost, drops             uint64 // the segment's running totals at the window's end
		wantSent, wantLost, wantDrops int64
	}{
		{false, 1000, 3, 0, 1000, 3, 0},
		{false, 2500, 3, 4, 1500, 0, 4},
		{true, 200, 10, 1, 200, 10, 1}, // a new segment: 2 500, 3 and 4 before it
		{false, 900, 12, 1, 700, 2, 0},
	} {
		if step.restart {
			c.Restart()
		}
		c.SetSegment(totals(step.sent, step.lost, step.drops))
		rep := c.CloseWindow()
		if got := [3]int64{rep.Counts[cyclestats.CounterFramesSent], rep.Counts[cyclestats.CounterFramesLost], rep.Counts[cyclestats.CounterRingDrops]}; got != [3]int64{step.wantSent, step.wantLost, step.wantDrops} {
			t.Errorf("totals %d, %d, %d: window of %d frames sent, %d lost, %d dropped; want %d, %d, %d",
				step.sent, step.lost, step.drops, got[0], got[1], got[2], step.wantSent, step.wantLost, step.wantDrops)
		}
	}
}

// TestSegmentRestart: a new segment announced by Restart is counted from
// 0 even when its first totals are above the old segment's, and after
// Attached the first window leaves out what a cycle process found
// running had counted before.
func TestSegmentRestart(t *testing.T) {
	r := newTestRegistry(t, testOptions())
	c := r.Consumer()
	value := func(name string) float64 { return family(t, r, name).GetMetric()[0].GetCounter().GetValue() }
	check := func(step string, drops, sent, lost float64) {
		t.Helper()
		if d, s, l := value(nameRingDrops), value(nameFramesSent), value(nameFramesLost); d != drops || s != sent || l != lost {
			t.Errorf("%s: ring drops %g, frames sent %g, lost %g; want %g, %g, %g", step, d, s, l, drops, sent, lost)
		}
	}
	c.SetSegment(totals(100, 3, 5))
	c.Restart() // a new cycle process, its totals below the old ones
	check("before its first totals", 5, 100, 3)
	c.SetSegment(totals(10, 1, 1))
	check("the new segment's first totals", 6, 110, 4)
	c.CloseWindow()

	c.Restart() // another cycle process, its totals already past the old ones
	c.SetSegment(totals(500, 9, 7))
	check("after Restart", 13, 610, 13)
	if rep := c.CloseWindow(); rep.Counts[cyclestats.CounterFramesSent] != 500 || rep.Counts[cyclestats.CounterFramesLost] != 9 || rep.Counts[cyclestats.CounterRingDrops] != 7 {
		t.Errorf("window after Restart: %d frames sent, %d lost, %d dropped; want 500, 9, 7",
			rep.Counts[cyclestats.CounterFramesSent], rep.Counts[cyclestats.CounterFramesLost], rep.Counts[cyclestats.CounterRingDrops])
	}

	c.Restart()
	c.Attached() // found running: a week of frames before this agent
	c.SetSegment(totals(600_000_000, 12_000, 40))
	c.SetSegment(totals(600_001_000, 12_002, 42))
	if rep := c.CloseWindow(); rep.Counts[cyclestats.CounterFramesSent] != 1000 || rep.Counts[cyclestats.CounterFramesLost] != 2 || rep.Counts[cyclestats.CounterRingDrops] != 2 {
		t.Errorf("first window after attaching: %d frames sent, %d lost, %d dropped; want 1000, 2, 2",
			rep.Counts[cyclestats.CounterFramesSent], rep.Counts[cyclestats.CounterFramesLost], rep.Counts[cyclestats.CounterRingDrops])
	}
	check("after attaching", 13+42, 610+600_001_000, 13+12_002)
}

package metrics

import "testing"

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
	for _, tc := range []struct {
		name string
		set  func(c *Consumer, n uint64)
	}{
		{nameRingDrops, func(c *Consumer, n uint64) { c.SetSegment(SegmentCounts{RingDrops: n}) }},
		{nameFramesSent, func(c *Consumer, n uint64) { c.SetSegment(SegmentCounts{FramesSent: n}) }},
		{nameFramesLost, func(c *Consumer, n uint64) { c.SetSegment(SegmentCounts{FramesLost: n}) }},
		{nameFramesLate, func(c *Consumer, n uint64) { c.SetSegment(SegmentCounts{FramesLate: n}) }},
		{nameLinkReceived, func(c *Consumer, n uint64) { c.SetSegment(SegmentCounts{LinkReceived: n}) }},
		{nameLinkDrops, func(c *Consumer, n uint64) { c.SetSegment(SegmentCounts{LinkDrops: n}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, testOptions())
			c := r.Consumer()
			for _, s := range steps {
				if s.restart {
					c.Restart()
				}
				tc.set(c, s.set)
				for _, name := range []string{nameRingDrops, nameFramesSent, nameFramesLost, nameFramesLate, nameLinkReceived, nameLinkDrops} {
					want := uint64(0)
					if name == tc.name {
						want = s.want
					}
					if got := family(t, r, name).GetMetric()[0].GetCounter().GetValue(); got != float64(want) {
						t.Errorf("after setting %s to %d: %s is %g, want %d", tc.name, s.set, name, got, want)
					}
				}
			}
		})
	}
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
		c.SetSegment(SegmentCounts{FramesSent: step.sent, FramesLost: step.lost, RingDrops: step.drops})
		rep := c.CloseWindow()
		if got := [3]int64{rep.Counts[CounterFramesSent], rep.Counts[CounterFramesLost], rep.Counts[CounterRingDrops]}; got != [3]int64{step.wantSent, step.wantLost, step.wantDrops} {
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
	c.SetSegment(SegmentCounts{RingDrops: 5, FramesSent: 100, FramesLost: 3})
	c.Restart() // a new cycle process, its totals below the old ones
	check("before its first totals", 5, 100, 3)
	c.SetSegment(SegmentCounts{RingDrops: 1, FramesSent: 10, FramesLost: 1})
	check("the new segment's first totals", 6, 110, 4)
	c.CloseWindow()

	c.Restart() // another cycle process, its totals already past the old ones
	c.SetSegment(SegmentCounts{RingDrops: 7, FramesSent: 500, FramesLost: 9})
	check("after Restart", 13, 610, 13)
	if rep := c.CloseWindow(); rep.Counts[CounterFramesSent] != 500 || rep.Counts[CounterFramesLost] != 9 || rep.Counts[CounterRingDrops] != 7 {
		t.Errorf("window after Restart: %d frames sent, %d lost, %d dropped; want 500, 9, 7",
			rep.Counts[CounterFramesSent], rep.Counts[CounterFramesLost], rep.Counts[CounterRingDrops])
	}

	c.Restart()
	c.Attached() // found running: a week of frames before this agent
	c.SetSegment(SegmentCounts{RingDrops: 40, FramesSent: 600_000_000, FramesLost: 12_000})
	c.SetSegment(SegmentCounts{RingDrops: 42, FramesSent: 600_001_000, FramesLost: 12_002})
	if rep := c.CloseWindow(); rep.Counts[CounterFramesSent] != 1000 || rep.Counts[CounterFramesLost] != 2 || rep.Counts[CounterRingDrops] != 2 {
		t.Errorf("first window after attaching: %d frames sent, %d lost, %d dropped; want 1000, 2, 2",
			rep.Counts[CounterFramesSent], rep.Counts[CounterFramesLost], rep.Counts[CounterRingDrops])
	}
	check("after attaching", 13+42, 610+600_001_000, 13+12_002)
}

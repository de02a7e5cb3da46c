package stats

// Period returns the time between two consecutive wake-ups, wake − prevWake.
func Period(prevWake, wake int64) int64 { return wake - prevWake }

// Jitter returns the signed period jitter (wake − prevWake) − target: positive
// when the cycle ran long, negative when it ran short.
func Jitter(prevWake, wake, target int64) int64 { return wake - prevWake - target }

// AbsJitter returns |Jitter(prevWake, wake, target)|, the figure exported as
// ecagent_cycle_jitter_seconds. It saturates at the largest int64.
func AbsJitter(prevWake, wake, target int64) int64 {
	return absDiff(wake-prevWake, target)
}

// Periods appends to dst the len(wakes)−1 periods between consecutive wake
// times and returns the extended slice (nothing is appended for fewer than two
// wake times). It allocates only if dst lacks capacity.
func Periods(dst, wakes []int64) []int64 {
	for i := 1; i < len(wakes); i++ {
		dst = append(dst, Period(wakes[i-1], wakes[i]))
	}
	return dst
}

// Jitters appends to dst the len(wakes)−1 signed jitters period − target of
// consecutive wake times and returns the extended slice. It allocates only if
// dst lacks capacity.
func Jitters(dst, wakes []int64, target int64) []int64 {
	for i := 1; i < len(wakes); i++ {
		dst = append(dst, Jitter(wakes[i-1], wakes[i], target))
	}
	return dst
}

// JitterTracker turns a stream of (cycle number, wake time) samples into
// periods and signed jitter. A period is only reported between consecutive
// cycle numbers, so a sample lost between producer and consumer (a ring drop)
// does not show up as a double-length period. The zero value is not usable:
// create it with NewJitterTracker. Observe does not allocate.
type JitterTracker struct {
	target    int64
	prevCycle uint64
	prevWake  int64
	primed    bool
}

// NewJitterTracker returns a tracker for a cycle time of target nanoseconds.
func NewJitterTracker(target int64) JitterTracker {
	return JitterTracker{target: target}
}

// Target returns the configured cycle time.
func (t *JitterTracker) Target() int64 { return t.target }

// Observe records the wake time of a cycle. When the previous observation was
// cycle−1 it returns that period and its signed jitter (period − target) with
// ok true; otherwise (first sample, gap, or cycle counter going backwards) ok is
// false and the sample only starts a new run.
func (t *JitterTracker) Observe(cycle uint64, wake int64) (period, jitter int64, ok bool) {
	ok = t.primed && cycle == t.prevCycle+1
	if ok {
		period = Period(t.prevWake, wake)
		jitter = period - t.target
	}
	t.prevCycle, t.prevWake, t.primed = cycle, wake, true
	return period, jitter, ok
}

// Reset forgets the previous sample, so the next Observe reports no period.
func (t *JitterTracker) Reset() { t.primed = false }

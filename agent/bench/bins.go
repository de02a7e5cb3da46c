package bench

import (
	"fmt"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
)

// minJitterStep is the narrowest bin edge of the jitter distribution, in
// ns: finer than the clocks the cycle reads are worth.
const minJitterStep = 100

// jitterBins returns the cycle-time distribution in bins of signed jitter
// (period − target) whose edges grow in 1-2-5 steps away from the target:
// a centre bin target ± base, then [base, 2·base), [2·base, 5·base), … on
// either side, as far as the shortest and the longest cycle. base is the
// median |jitter| rounded down to a 1-2-5 step (at least minJitterStep),
// so that the centre holds about half the cycles whatever the host, and
// a few outliers a thousand times further out take a handful of rows, not
// all of them: equal-width bins between the extremes put everything but
// the outliers in the first bin. Bins from the first to the last that
// holds a cycle are returned, empty ones between included; each is
// Lower ≤ period < Upper in ns of cycle time. The counts are of values,
// a uniform sample when the percentiles are sampled.
func jitterBins(periods []int64, target int64) ([]Bin, error) {
	if len(periods) == 0 {
		return nil, fmt.Errorf("jitter bins: %w", stats.ErrNoValues)
	}
	median, err := stats.SymmetricInterval(periods, target, 0.5)
	if err != nil {
		return nil, fmt.Errorf("jitter bins: %w", err)
	}
	base := step125AtMost(max(median.HalfWidth, minJitterStep))
	var far int64 // the largest |jitter|
	for _, p := range periods {
		far = max(far, absInt64(p-target))
	}
	// edges: base, 2·base or 5·base, … up to the first beyond far.
	edges := []int64{base}
	for edges[len(edges)-1] <= far {
		edges = append(edges, nextStep125(edges[len(edges)-1]))
	}
	// Bins, lowest first: the negative side outwards-in, the centre, the
	// positive side.
	var bins []Bin
	for k := len(edges) - 1; k > 0; k-- {
		bins = append(bins, Bin{Lower: float64(target - edges[k]), Upper: float64(target - edges[k-1])})
	}
	bins = append(bins, Bin{Lower: float64(target - base), Upper: float64(target + base)})
	for k := 1; k < len(edges); k++ {
		bins = append(bins, Bin{Lower: float64(target + edges[k-1]), Upper: float64(target + edges[k])})
	}
	for _, p := range periods {
		for i := range bins {
			if float64(p) >= bins[i].Lower && float64(p) < bins[i].Upper {
				bins[i].Count++
				break
			}
		}
	}
	first, last := 0, len(bins)-1
	for bins[first].Count == 0 {
		first++
	}
	for bins[last].Count == 0 {
		last--
	}
	bins = bins[first : last+1]
	for i := range bins {
		bins[i].Percent = 100 * float64(bins[i].Count) / float64(len(periods))
	}
	return bins, nil
}

// step125AtMost returns the largest of 1, 2, 5, 10, 20, 50, … not above
// v (v ≥ 1).
func step125AtMost(v int64) int64 {
	s := int64(1)
	for nextStep125(s) <= v {
		s = nextStep125(s)
	}
	return s
}

// nextStep125 returns the 1-2-5 step after s: 1 → 2 → 5 → 10 → 20 ….
func nextStep125(s int64) int64 {
	d := int64(1)
	for d*10 <= s {
		d *= 10
	}
	switch s / d {
	case 1:
		return 2 * d
	case 2:
		return 5 * d
	}
	return 10 * d
}

func absInt64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

package bench

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
)

// DefaultBlocks is the number of blocks of the interleaved comparison
// (five of each side).
const DefaultBlocks = 10

// Side is the program that measured a block of the comparison.
type Side int

// The two sides of the comparison.
const (
	SideEcagent Side = iota
	SideCyclictest
)

func (s Side) String() string {
	if s == SideCyclictest {
		return "cyclictest"
	}
	return "ecagent"
}

// MarshalText writes the side as "ecagent" or "cyclictest".
func (s Side) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// BlockOrder returns the order of blocks blocks (even, at least 2) in
// ABBA order: ecagent, cyclictest, cyclictest, ecagent, ecagent, … Each
// consecutive pair (blocks 2k and 2k+1) holds one block of each side, and
// which side goes first alternates from pair to pair, so that a drift of
// the host's noise over the run (a background job starting, the page
// cache filling) weighs on both sides alike instead of on the one that
// always runs second.
func BlockOrder(blocks int) ([]Side, error) {
	if blocks < 2 || blocks%2 != 0 {
		return nil, fmt.Errorf("bench: %d blocks: want an even number, at least 2 (one of each side per pair)", blocks)
	}
	order := make([]Side, blocks)
	for k := 0; k < blocks/2; k++ {
		first, second := SideEcagent, SideCyclictest
		if k%2 == 1 {
			first, second = second, first
		}
		order[2*k], order[2*k+1] = first, second
	}
	return order, nil
}

// LatencyBlock is the wake-up latency of one block: its histogram in 1 µs
// bins from 0 (the bench's --histogram-us range; beyond it Overflow), the
// largest value and the number of wake-ups.
type LatencyBlock struct {
	Side      Side
	Cycles    int64
	Max       int64 // ns, truncated to whole µs on cyclictest's side
	Histogram *stats.LinearHistogram
}

// CyclictestBlock turns cyclictest's report of one block (its first
// thread, in µs with a -h histogram) into a LatencyBlock whose histogram
// has histogramMicros bins, like ecagent's: the parsed histogram ends at
// its highest non-empty bin, so it is laid into bins of the same range,
// and what lies beyond counts as overflow.
func CyclictestBlock(ct *stats.CyclictestReport, histogramMicros int) (LatencyBlock, error) {
	if len(ct.Threads) == 0 || ct.Threads[0].Histogram == nil {
		return LatencyBlock{}, ErrNoCyclictestThread
	}
	t := &ct.Threads[0]
	src := t.Histogram
	if src.Origin != 0 || src.BinWidth != 1000 {
		return LatencyBlock{}, fmt.Errorf("bench: cyclictest histogram of %d ns bins from %d, want 1 µs bins from 0", src.BinWidth, src.Origin)
	}
	h, err := stats.NewLinearHistogram(0, 1000, histogramMicros)
	if err != nil {
		return LatencyBlock{}, fmt.Errorf("bench: %w", err)
	}
	for i, c := range src.Bins {
		if i < len(h.Bins) {
			h.Bins[i] += c
		} else {
			h.Overflow += c
		}
	}
	h.Underflow, h.Overflow = src.Underflow, h.Overflow+src.Overflow
	return LatencyBlock{Side: SideCyclictest, Cycles: t.Cycles, Max: max(t.Max, 0), Histogram: h}, nil
}

// ErrNoCyclictestThread is returned for a cyclictest report without a
// thread or without a histogram.
var ErrNoCyclictestThread = errors.New("bench: cyclictest report has no thread with a histogram")

// Union merges blocks (of either side; their histograms must have the same
// range) into one: the histograms added bin by bin, the counts added, the
// largest maximum.
func Union(blocks []LatencyBlock) (LatencyBlock, error) {
	if len(blocks) == 0 {
		return LatencyBlock{}, errors.New("bench: union of no blocks")
	}
	u := LatencyBlock{Side: blocks[0].Side, Histogram: &stats.LinearHistogram{
		Origin: blocks[0].Histogram.Origin, BinWidth: blocks[0].Histogram.BinWidth,
		Bins: make([]uint64, len(blocks[0].Histogram.Bins)),
	}}
	for _, b := range blocks {
		if err := u.Histogram.Merge(b.Histogram); err != nil {
			return LatencyBlock{}, fmt.Errorf("bench: union of blocks: %w", err)
		}
		u.Cycles += b.Cycles
		u.Max = max(u.Max, b.Max)
	}
	return u, nil
}

// Quantiles are wake-up latency figures in whole µs (truncated, as
// cyclictest records them).
type Quantiles struct {
	Cycles int64 `json:"cycles"`
	P50    int64 `json:"p50_us"`
	P99    int64 `json:"p99_us"`
	P999   int64 `json:"p99_9_us"`
	Max    int64 `json:"max_us"`
	// Exact is false when a percentile lies in the histogram's overflow:
	// that one is then the histogram's range, a lower bound.
	Exact bool `json:"percentiles_exact"`
}

// QuantilesOf returns the nearest-rank p50, p99 and p99.9 of the block's
// histogram and its maximum, in whole µs. A rank that is the last value is
// the maximum, known even beyond the histogram.
func QuantilesOf(b LatencyBlock) Quantiles {
	q := Quantiles{Cycles: b.Cycles, Max: floorMicros(b.Max), Exact: true}
	total := int64(b.Histogram.Total())
	for _, p := range []struct {
		q   float64
		dst *int64
	}{{0.5, &q.P50}, {0.99, &q.P99}, {0.999, &q.P999}} {
		if total > 0 && stats.NearestRank(p.q, total) == total {
			*p.dst = q.Max
			continue
		}
		v, ok := b.Histogram.Percentile(p.q)
		*p.dst = floorMicros(v)
		q.Exact = q.Exact && ok
	}
	return q
}

// Ratios are ecagent / cyclictest of each figure; a cyclictest figure of
// 0 µs counts as 1 µs (its resolution).
type Ratios struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func ratiosOf(e, c Quantiles) Ratios {
	return Ratios{P50: ratio(e.P50, c.P50), P99: ratio(e.P99, c.P99), P999: ratio(e.P999, c.P999), Max: ratio(e.Max, c.Max)}
}

// Spread is the minimum, median and maximum of a ratio over the block
// pairs; the median of an even number of pairs is the mean of the middle
// two.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

// SpreadOf returns the spread of vs (not empty); vs is not modified.
func SpreadOf(vs []float64) Spread {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return Spread{Min: s[0], Median: med, Max: s[n-1]}
}

// Spreads is the spread of each ratio over the block pairs.
type Spreads struct {
	P50  Spread `json:"p50"`
	P99  Spread `json:"p99"`
	P999 Spread `json:"p99_9"`
	Max  Spread `json:"max"`
}

// BlockPair is one pair of adjacent blocks, one of each side.
type BlockPair struct {
	Ecagent    Quantiles `json:"ecagent"`
	Cyclictest Quantiles `json:"cyclictest"`
	Ratio      Ratios    `json:"ratio"`
}

// BlockComparison sets ecagent's wake-up latency beside cyclictest's,
// measured in interleaved blocks of equal length under the same settings
// (interval, priority, core, locked memory, histogram), so that both
// sides see the same stretch of the host's noise.
type BlockComparison struct {
	// Order is the sides of the blocks in the order they ran.
	Order []Side `json:"order"`
	// BlockCycles is the number of wake-ups of every block, and Block its
	// length (BlockCycles × interval).
	BlockCycles uint64        `json:"block_cycles"`
	Block       time.Duration `json:"block_ns"`
	// HistogramMicros is the range of both sides' 1 µs histograms: a
	// percentile at it lies beyond it (a lower bound).
	HistogramMicros int `json:"histogram_us"`
	// Cmdline is the cyclictest command line of one block (the JSON file
	// name differs between blocks).
	Cmdline string `json:"cmdline"`
	// Ecagent and Cyclictest are the figures over the union of each
	// side's blocks; Ratio their ratios.
	Ecagent    Quantiles `json:"ecagent"`
	Cyclictest Quantiles `json:"cyclictest"`
	Ratio      Ratios    `json:"ratio"`
	// Pairs are the block pairs in order, and Spread the spread of their
	// ratios.
	Pairs  []BlockPair `json:"pairs"`
	Spread Spreads     `json:"pair_ratio_spread"`
	// P99Met and P999Met say whether the union's ratios meet
	// TargetP99Ratio and TargetP999Ratio.
	P99Met  bool `json:"p99_target_met"`
	P999Met bool `json:"p99_9_target_met"`
	// BusyWait is cycle.busywait: with a busy-wait tail ecagent spins
	// before each deadline, which cyclictest does not.
	BusyWait time.Duration `json:"busywait_ns,omitempty"`
}

// CompareBlocks builds the comparison of blocks, which ran in order
// (BlockOrder's): blocks[i] is of side order[i]. Pair k is the k-th block
// of each side, which with BlockOrder are blocks 2k and 2k+1.
func CompareBlocks(order []Side, blocks []LatencyBlock) (*BlockComparison, error) {
	if len(order) != len(blocks) {
		return nil, fmt.Errorf("bench: %d blocks for an order of %d", len(blocks), len(order))
	}
	var sides [2][]LatencyBlock
	for i, b := range blocks {
		if b.Side != order[i] {
			return nil, fmt.Errorf("bench: block %d is %v, the order says %v", i, b.Side, order[i])
		}
		sides[b.Side] = append(sides[b.Side], b)
	}
	if len(sides[0]) == 0 || len(sides[0]) != len(sides[1]) {
		return nil, fmt.Errorf("bench: %d ecagent and %d cyclictest blocks, want as many of each, at least 1",
			len(sides[0]), len(sides[1]))
	}
	c := &BlockComparison{Order: slices.Clone(order), HistogramMicros: len(blocks[0].Histogram.Bins)}
	for k := range sides[0] {
		e, ct := QuantilesOf(sides[0][k]), QuantilesOf(sides[1][k])
		c.Pairs = append(c.Pairs, BlockPair{Ecagent: e, Cyclictest: ct, Ratio: ratiosOf(e, ct)})
	}
	ue, err := Union(sides[0])
	if err != nil {
		return nil, err
	}
	uc, err := Union(sides[1])
	if err != nil {
		return nil, err
	}
	c.Ecagent, c.Cyclictest = QuantilesOf(ue), QuantilesOf(uc)
	c.Ratio = ratiosOf(c.Ecagent, c.Cyclictest)
	pick := func(f func(Ratios) float64) Spread {
		vs := make([]float64, len(c.Pairs))
		for i, p := range c.Pairs {
			vs[i] = f(p.Ratio)
		}
		return SpreadOf(vs)
	}
	c.Spread = Spreads{
		P50:  pick(func(r Ratios) float64 { return r.P50 }),
		P99:  pick(func(r Ratios) float64 { return r.P99 }),
		P999: pick(func(r Ratios) float64 { return r.P999 }),
		Max:  pick(func(r Ratios) float64 { return r.Max }),
	}
	c.P99Met = c.Ratio.P99 <= TargetP99Ratio
	c.P999Met = c.Ratio.P999 <= TargetP999Ratio
	return c, nil
}

// WriteText prints the comparison: per figure the union of each side, the
// ratio of the unions and the spread of the per-pair ratio, then the
// blocks pair by pair.
func (c *BlockComparison) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nWake-up latency: ecagent vs cyclictest in %d interleaved blocks of %d cycles (%v) each\n",
		len(c.Order), c.BlockCycles, c.Block)
	order := make([]string, len(c.Order))
	for i, s := range c.Order {
		order[i] = map[Side]string{SideEcagent: "E", SideCyclictest: "C"}[s]
	}
	fmt.Fprintf(&b, "(order %s; same interval, priority, core, mlockall and 1 µs histogram; whole µs)\n", strings.Join(order, " "))
	fmt.Fprintf(&b, "  %-8s%10s%12s%9s   %-22s %s\n", "", "ecagent", "cyclictest", "ratio", "pair ratio min/med/max", "target")
	bound := func(v int64, exact bool) string {
		if exact || v < int64(c.HistogramMicros) {
			return strconv.FormatInt(v, 10)
		}
		return ">=" + strconv.FormatInt(v, 10)
	}
	verdict := func(met bool, t float64) string {
		if met {
			return fmt.Sprintf("<= %.1f met", t)
		}
		return fmt.Sprintf("<= %.1f NOT met", t)
	}
	fmt.Fprintf(&b, "  %-8s%10d%12d\n", "cycles", c.Ecagent.Cycles, c.Cyclictest.Cycles)
	for _, row := range []struct {
		name     string
		e, ct    int64
		exact    bool
		r        float64
		s        Spread
		target   string
		isMaxRow bool
	}{
		{"p50", c.Ecagent.P50, c.Cyclictest.P50, true, c.Ratio.P50, c.Spread.P50, "", false},
		{"p99", c.Ecagent.P99, c.Cyclictest.P99, false, c.Ratio.P99, c.Spread.P99, verdict(c.P99Met, TargetP99Ratio), false},
		{"p99.9", c.Ecagent.P999, c.Cyclictest.P999, false, c.Ratio.P999, c.Spread.P999, verdict(c.P999Met, TargetP999Ratio), false},
		{"max", c.Ecagent.Max, c.Cyclictest.Max, true, c.Ratio.Max, c.Spread.Max, "", true},
	} {
		e, ct := strconv.FormatInt(row.e, 10), strconv.FormatInt(row.ct, 10)
		if !row.isMaxRow {
			e, ct = bound(row.e, c.Ecagent.Exact), bound(row.ct, c.Cyclictest.Exact)
		}
		fmt.Fprintf(&b, "  %-8s%10s%12s%9.2f   %-22s %s\n", row.name, e, ct, row.r,
			fmt.Sprintf("%.2f / %.2f / %.2f", row.s.Min, row.s.Median, row.s.Max), row.target)
	}
	if !c.Ecagent.Exact || !c.Cyclictest.Exact {
		b.WriteString("  (a percentile lies beyond the histogram: raise --histogram-us)\n")
	}
	b.WriteString("  pairs (ecagent / cyclictest p99, p99.9, max in µs):\n")
	for k, p := range c.Pairs {
		fmt.Fprintf(&b, "    %2d  p99 %d/%d (%.2f)  p99.9 %d/%d (%.2f)  max %d/%d (%.2f)\n", k+1,
			p.Ecagent.P99, p.Cyclictest.P99, p.Ratio.P99, p.Ecagent.P999, p.Cyclictest.P999, p.Ratio.P999,
			p.Ecagent.Max, p.Cyclictest.Max, p.Ratio.Max)
	}
	if c.BusyWait > 0 {
		fmt.Fprintf(&b, "  (ecagent spins the last %v before each deadline; cyclictest does not)\n", c.BusyWait)
	}
	fmt.Fprintf(&b, "  cyclictest: %s\n", c.Cmdline)
	lines := strings.Split(b.String(), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	_, err := io.WriteString(w, strings.Join(lines, "\n"))
	return err
}

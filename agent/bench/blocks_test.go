package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/cyclestats/stats"
)

func TestBlockOrder(t *testing.T) {
	E, C := SideEcagent, SideCyclictest
	cases := map[int][]Side{
		2:  {E, C},
		4:  {E, C, C, E},
		10: {E, C, C, E, E, C, C, E, E, C},
	}
	for n, want := range cases {
		got, err := BlockOrder(n)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("BlockOrder(%d) = %v, %v; want %v", n, got, err, want)
		}
		// Every pair holds one block of each side.
		for k := 0; k < n; k += 2 {
			if got[k] == got[k+1] {
				t.Errorf("BlockOrder(%d): pair %d is %v %v", n, k/2, got[k], got[k+1])
			}
		}
	}
	for _, n := range []int{-2, 0, 1, 3, 9} {
		if _, err := BlockOrder(n); err == nil {
			t.Errorf("BlockOrder(%d): no error", n)
		}
	}
}

// block returns a block of side s whose latencies are lats µs, in a
// histogram of histMicros bins.
func block(t *testing.T, s Side, histMicros int, lats ...int64) LatencyBlock {
	t.Helper()
	h, err := stats.NewLinearHistogram(0, 1000, histMicros)
	if err != nil {
		t.Fatal(err)
	}
	b := LatencyBlock{Side: s, Histogram: h}
	for _, l := range lats {
		h.Add(l * us1)
		b.Cycles++
		b.Max = max(b.Max, l*us1)
	}
	return b
}

func repeat(n int, v int64) []int64 { return slices.Repeat([]int64{v}, n) }

func TestCyclictestBlockRebins(t *testing.T) {
	// cyclictest -h 100 with samples at 3, 50 and 99 µs and one at 150 µs:
	// its parsed histogram ends at bin 99, the 150 µs one is overflow.
	ct := cyclictestOf(t, 100, 3, 50, 99, 150)
	ct.Threads[0].Histogram.Bins = ct.Threads[0].Histogram.Bins[:100]
	b, err := CyclictestBlock(ct, 60)
	if err != nil {
		t.Fatal(err)
	}
	h := b.Histogram
	if len(h.Bins) != 60 || h.Bins[3] != 1 || h.Bins[50] != 1 || h.Overflow != 2 || h.Total() != 4 {
		t.Errorf("rebinned to 60 µs: %d bins, bin 3 %d, bin 50 %d, overflow %d", len(h.Bins), h.Bins[3], h.Bins[50], h.Overflow)
	}
	if b.Side != SideCyclictest || b.Cycles != 4 || b.Max != 150*us1 {
		t.Errorf("block %v, %d cycles, max %d", b.Side, b.Cycles, b.Max)
	}
	b, err = CyclictestBlock(ct, 1000)
	if err != nil || len(b.Histogram.Bins) != 1000 || b.Histogram.Overflow != 1 || b.Histogram.Bins[99] != 1 {
		t.Errorf("rebinned to 1000 µs: %v, overflow %d", err, b.Histogram.Overflow)
	}
	ct.Threads[0].Histogram = nil
	if _, err := CyclictestBlock(ct, 100); !errors.Is(err, ErrNoCyclictestThread) {
		t.Errorf("no histogram: %v", err)
	}
	if _, err := CyclictestBlock(&stats.CyclictestReport{}, 100); !errors.Is(err, ErrNoCyclictestThread) {
		t.Errorf("no thread: %v", err)
	}
}

func TestUnionMergesBlocks(t *testing.T) {
	a := block(t, SideEcagent, 100, 1, 2, 2, 500)
	b := block(t, SideEcagent, 100, 2, 7)
	u, err := Union([]LatencyBlock{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if u.Cycles != 6 || u.Max != 500*us1 || u.Histogram.Bins[2] != 3 || u.Histogram.Bins[7] != 1 ||
		u.Histogram.Overflow != 1 || u.Histogram.Total() != 6 {
		t.Errorf("union: %d cycles, max %d, bin 2 %d, bin 7 %d, overflow %d",
			u.Cycles, u.Max, u.Histogram.Bins[2], u.Histogram.Bins[7], u.Histogram.Overflow)
	}
	if a.Histogram.Bins[2] != 2 || a.Histogram.Total() != 4 {
		t.Error("Union changed a block")
	}
	if _, err := Union([]LatencyBlock{a, block(t, SideEcagent, 50, 1)}); err == nil {
		t.Error("blocks of different ranges merged")
	}
	if _, err := Union(nil); err == nil {
		t.Error("union of no blocks")
	}
}

func TestQuantilesOfUnion(t *testing.T) {
	// Two blocks of 1000: all at 10 µs, and 980 at 20 µs with 20 at 40.
	// The union's p50 is the 1000th of 2000 (10 µs), its p99 the 1980th
	// (20 µs), its p99.9 the 1998th (40 µs): none is a block's own.
	a := block(t, SideEcagent, 100, repeat(1000, 10)...)
	b := block(t, SideEcagent, 100, append(repeat(980, 20), repeat(20, 40)...)...)
	u, err := Union([]LatencyBlock{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := Quantiles{Cycles: 2000, P50: 10, P99: 20, P999: 40, Max: 40, Exact: true}
	if got := QuantilesOf(u); got != want {
		t.Errorf("union %+v, want %+v", got, want)
	}
	if got := QuantilesOf(b); got.P50 != 20 || got.P99 != 40 {
		t.Errorf("block b %+v", got)
	}
	// p99.9 in the overflow: a lower bound at the range; the last rank
	// is the maximum even beyond the histogram.
	c := block(t, SideCyclictest, 30, append(repeat(997, 5), 100, 200, 300)...)
	want = Quantiles{Cycles: 1000, P50: 5, P99: 5, P999: 30, Max: 300, Exact: false}
	if got := QuantilesOf(c); got != want {
		t.Errorf("overflowing %+v, want %+v", got, want)
	}
	one := block(t, SideEcagent, 30, 250)
	if got := QuantilesOf(one); got.P50 != 250 || got.P999 != 250 || !got.Exact {
		t.Errorf("one value beyond the histogram: %+v", got)
	}
}

func TestSpreadOf(t *testing.T) {
	in := []float64{3, 1, 2}
	if got := SpreadOf(in); got != (Spread{Min: 1, Median: 2, Max: 3}) {
		t.Errorf("odd: %+v", got)
	}
	if !slices.Equal(in, []float64{3, 1, 2}) {
		t.Error("SpreadOf sorted its argument")
	}
	if got := SpreadOf([]float64{4, 1, 2, 10}); got != (Spread{Min: 1, Median: 3, Max: 10}) {
		t.Errorf("even: %+v", got)
	}
	if got := SpreadOf([]float64{0.5}); got != (Spread{Min: 0.5, Median: 0.5, Max: 0.5}) {
		t.Errorf("one: %+v", got)
	}
}

// comparison builds a three-pair comparison in BlockOrder's order whose
// figures are worked out by hand below.
func comparison(t *testing.T) *BlockComparison {
	t.Helper()
	order, err := BlockOrder(6) // E C C E E C
	if err != nil {
		t.Fatal(err)
	}
	E, C := SideEcagent, SideCyclictest
	// 1000 wake-ups a block: 989 at base, 10 at tail, 1 at spike (the
	// p99.9 rank is 999, so p99.9 is the tail and max is the spike).
	lat := func(base, tail, spike int64) []int64 {
		return append(append(repeat(989, base), repeat(10, tail)...), spike)
	}
	blocks := []LatencyBlock{
		block(t, E, 1000, lat(10, 20, 100)...), // pair 1
		block(t, C, 1000, lat(10, 10, 50)...),
		block(t, C, 1000, lat(5, 40, 400)...), // pair 2
		block(t, E, 1000, lat(10, 20, 100)...),
		block(t, E, 1000, lat(0, 30, 60)...), // pair 3
		block(t, C, 1000, lat(0, 60, 600)...),
	}
	c, err := CompareBlocks(order, blocks)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCompareBlocksArithmetic(t *testing.T) {
	c := comparison(t)
	// Pair ratios (ecagent / cyclictest; 0 µs counts as 1 µs):
	//   p50   10/10=1    10/5=2     0/0→0/1=0
	//   p99   20/10=2    20/40=0.5  30/60=0.5
	//   p99.9 20/10=2    20/40=0.5  30/60=0.5
	//   max   100/50=2   100/400=.25 60/600=0.1
	wantPairs := []Ratios{{1, 2, 2, 2}, {2, 0.5, 0.5, 0.25}, {0, 0.5, 0.5, 0.1}}
	if len(c.Pairs) != 3 {
		t.Fatalf("%d pairs", len(c.Pairs))
	}
	for k, p := range c.Pairs {
		if p.Ratio != wantPairs[k] {
			t.Errorf("pair %d ratios %+v, want %+v", k+1, p.Ratio, wantPairs[k])
		}
	}
	if c.Pairs[1].Ecagent.P99 != 20 || c.Pairs[1].Cyclictest.P99 != 40 {
		t.Errorf("pair 2 is not the second block of each side: %+v", c.Pairs[1])
	}
	wantSpread := Spreads{
		P50: Spread{0, 1, 2}, P99: Spread{0.5, 0.5, 2}, P999: Spread{0.5, 0.5, 2}, Max: Spread{0.1, 0.25, 2},
	}
	if c.Spread != wantSpread {
		t.Errorf("spread %+v, want %+v", c.Spread, wantSpread)
	}
	// Unions of 3000: ecagent 2967 at 0/10 µs (989 at 0), 20 at 20, 10 at
	// 30, spikes 60 and 100; the p50 rank 1500 is 10 µs, p99 rank 2970 is
	// 20, p99.9 rank 2997 is 30. cyclictest: 989 each at 0, 5 and 10, 10
	// each at 10, 40 and 60, spikes 50, 400, 600; p50 rank 1500 is 5 µs,
	// p99 rank 2970 is 10 (2967 + the 10 at 10 µs), p99.9 rank 2997 is 60.
	if want := (Quantiles{Cycles: 3000, P50: 10, P99: 20, P999: 30, Max: 100, Exact: true}); c.Ecagent != want {
		t.Errorf("ecagent union %+v, want %+v", c.Ecagent, want)
	}
	if want := (Quantiles{Cycles: 3000, P50: 5, P99: 10, P999: 60, Max: 600, Exact: true}); c.Cyclictest != want {
		t.Errorf("cyclictest union %+v, want %+v", c.Cyclictest, want)
	}
	if want := (Ratios{P50: 2, P99: 2, P999: 0.5, Max: 100.0 / 600}); c.Ratio != want {
		t.Errorf("union ratios %+v, want %+v", c.Ratio, want)
	}
	if c.P99Met || !c.P999Met {
		t.Errorf("targets: p99 met %v (2 > 1.2), p99.9 met %v (0.5 ≤ 1.5)", c.P99Met, c.P999Met)
	}
	if math.IsNaN(c.Ratio.Max) {
		t.Error("NaN ratio")
	}
}

func TestCompareBlocksErrors(t *testing.T) {
	E, C := SideEcagent, SideCyclictest
	a, b := block(t, E, 10, 1), block(t, C, 10, 1)
	if _, err := CompareBlocks([]Side{E, C}, []LatencyBlock{a}); err == nil {
		t.Error("fewer blocks than the order")
	}
	if _, err := CompareBlocks([]Side{C, E}, []LatencyBlock{a, b}); err == nil {
		t.Error("blocks in another order than said")
	}
	if _, err := CompareBlocks([]Side{E, E}, []LatencyBlock{a, a}); err == nil {
		t.Error("no cyclictest block")
	}
}

func TestBlockComparisonJSON(t *testing.T) {
	c := comparison(t)
	c.BlockCycles, c.Cmdline = 1000, "cyclictest -m"
	data, err := json.Marshal(&Report{Comparison: c})
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(top["cyclictest_comparison"], &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"block_cycles", "block_ns", "cmdline", "cyclictest", "ecagent", "histogram_us", "order", "p99_9_target_met",
		"p99_target_met", "pair_ratio_spread", "pairs", "ratio"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %q, want %q", keys, want)
	}
	if o := got["order"].([]any); len(o) != 6 || o[0] != "ecagent" || o[1] != "cyclictest" || o[2] != "cyclictest" {
		t.Errorf("order %v", o)
	}
	side := got["ecagent"].(map[string]any)
	for _, k := range []string{"cycles", "p50_us", "p99_us", "p99_9_us", "max_us", "percentiles_exact"} {
		if _, ok := side[k]; !ok {
			t.Errorf("ecagent lacks %q: %v", k, side)
		}
	}
	spread := got["pair_ratio_spread"].(map[string]any)["p99"].(map[string]any)
	if spread["min"] != 0.5 || spread["median"] != 0.5 || spread["max"] != 2.0 {
		t.Errorf("p99 spread %v", spread)
	}
	if got["histogram_us"] != 1000.0 {
		t.Errorf("histogram_us %v", got["histogram_us"])
	}
	if pairs := got["pairs"].([]any); len(pairs) != 3 {
		t.Errorf("%d pairs", len(pairs))
	} else if r := pairs[0].(map[string]any)["ratio"].(map[string]any); r["p50"] != 1.0 || r["max"] != 2.0 {
		t.Errorf("pair 1 ratio %v", r)
	}
}

func TestBlockComparisonText(t *testing.T) {
	c := comparison(t)
	c.Cyclictest.Exact = false // only a figure at the range (1000 µs) is a bound
	c.Cyclictest.P999 = 1000
	c.BlockCycles, c.Cmdline = 1000, "cyclictest -m -i 1000"
	var b bytes.Buffer
	if err := c.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"in 6 interleaved blocks of 1000 cycles",
		"(order E C C E E C;",
		"  p99             20          10     2.00   0.50 / 0.50 / 2.00     <= 1.2 NOT met\n",
		"  p50             10           5     2.00",
		"  p99.9           30      >=1000     0.50   0.50 / 0.50 / 2.00     <= 1.5 met\n",
		"  max            100         600     0.17   0.10 / 0.25 / 2.00\n",
		"     2  p99 20/40 (0.50)",
		"cyclictest: cyclictest -m -i 1000",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}

// TestRecorderBlocks: a recorder fed by two blocks (two cycle processes)
// measures no period across them, adds up their spans as the duration,
// and Block returns the current block alone.
func TestRecorderBlocks(t *testing.T) {
	rec, err := NewRecorder(target, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	rec.StartBlock()
	for _, c := range simple(5, 5, 5) {
		s := sample(c)
		rec.Observe(&s)
	}
	first := rec.Block()
	rec.StartBlock()
	for _, c := range simple(7, 200) { // cycles 0, 1 again, a new process
		c.deadline = t0 + 10*int64(target) + int64(c.cycle)*int64(target)
		s := sample(c)
		rec.Observe(&s)
	}
	second := rec.Block()
	if first.Cycles != 3 || first.Histogram.Bins[5] != 3 || first.Max != 5*us1 {
		t.Errorf("first block %+v", first)
	}
	if second.Cycles != 2 || second.Histogram.Bins[7] != 1 || second.Histogram.Overflow != 1 ||
		second.Histogram.Total() != 2 || second.Max != 200*us1 || second.Side != SideEcagent {
		t.Errorf("second block %+v", second)
	}
	rep, err := rec.Report(RunInfo{})
	if err != nil {
		t.Fatal(err)
	}
	// Periods: two in the first block, one in the second.
	if rep.CycleTime.Count != 3 || rep.Cycles != 5 || rep.MissingCycles != 0 || rep.ScheduleRestarts != 0 {
		t.Errorf("periods %d, cycles %d, missing %d, restarts %d", rep.CycleTime.Count, rep.Cycles, rep.MissingCycles, rep.ScheduleRestarts)
	}
	// Spans: 2 periods + the last job (100 µs) in each block, from the
	// first wake (5 µs and 7 µs late) to the last end.
	want := (2*int64(target) + 100*us1) + (int64(target) + (200-7)*us1 + 100*us1)
	if int64(rep.Duration) != want {
		t.Errorf("duration %v, want %v", rep.Duration, want)
	}
	if rep.WakeupHistogram.Total() != 5 {
		t.Errorf("run histogram holds %d", rep.WakeupHistogram.Total())
	}
}

// TestJoinRunInfo: the blocks of an interleaved run add up their drops,
// frames, scrapes and windows, keep the first block's start and end at
// the last one's, and the joined copy does not alias the first block.
func TestJoinRunInfo(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	blocks := []RunInfo{
		{Start: t0, End: t0.Add(time.Second), RingDrops: 1, FramesSent: 1000, FramesLost: 2,
			Telemetry: &Telemetry{Address: "a", Scrapes: 1, Windows: 2}},
		{Start: t0.Add(2 * time.Second), End: t0.Add(3 * time.Second), FramesSent: 2000, FramesLost: 5, Interrupted: true,
			Telemetry: &Telemetry{Address: "b", Scrapes: 3, ScrapeErrors: 1, Windows: 4}},
	}
	var u *RunInfo
	for i := range blocks {
		u = joinRunInfo(u, &blocks[i])
	}
	if !u.Start.Equal(t0) || !u.End.Equal(t0.Add(3*time.Second)) || u.RingDrops != 1 ||
		u.FramesSent != 3000 || u.FramesLost != 7 || !u.Interrupted {
		t.Errorf("joined %+v", *u)
	}
	if tel := u.Telemetry; tel.Address != "b" || tel.Scrapes != 4 || tel.ScrapeErrors != 1 || tel.Windows != 6 {
		t.Errorf("joined telemetry %+v", *tel)
	}
	if blocks[0].FramesSent != 1000 || blocks[0].Telemetry.Scrapes != 1 {
		t.Errorf("joining changed the first block: %+v, %+v", blocks[0], *blocks[0].Telemetry)
	}
}

package bench

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
)

// A run whose cycles keep within a few µs but for one stall a thousand
// times further out: equal-width bins between the extremes put 99.9 % in
// the first; the 1-2-5 bins show where the cycles are.
func TestJitterBinsShowTheDistribution(t *testing.T) {
	const target = 1_000_000
	var periods []int64
	for i := range 999 {
		periods = append(periods, target+int64(i%11-5)*1000) // -5 .. +5 µs
	}
	periods = append(periods, target+27_900_000) // a 27.9 ms stall
	bins, err := jitterBins(periods, target)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for i, b := range bins {
		total += b.Count
		if b.Percent > 60 {
			t.Errorf("bin %d [%v, %v) holds %.1f %% of the cycles: %+v", i, b.Lower, b.Upper, b.Percent, bins)
		}
		if i > 0 && b.Lower != bins[i-1].Upper {
			t.Errorf("bin %d starts at %v, the previous ends at %v", i, b.Lower, bins[i-1].Upper)
		}
		for _, edge := range []float64{b.Lower - target, b.Upper - target} {
			if !is125(int64(edge)) {
				t.Errorf("bin %d: edge %+v ns from the target is not a 1-2-5 step", i, edge)
			}
		}
	}
	if total != len(periods) {
		t.Errorf("bins hold %d cycles, want %d", total, len(periods))
	}
	if first, last := bins[0], bins[len(bins)-1]; first.Count == 0 || last.Count != 1 || last.Upper <= target+27_900_000 {
		t.Errorf("first bin %+v, last %+v: want them to hold the extremes", first, last)
	}
	if len(bins) > 20 {
		t.Errorf("%d bins, want a screenful", len(bins))
	}
}

// is125 reports whether |v| is 1, 2 or 5 times a power of ten.
func is125(v int64) bool {
	if v < 0 {
		v = -v
	}
	for v >= 10 && v%10 == 0 {
		v /= 10
	}
	return v == 1 || v == 2 || v == 5
}

func TestJitterBinsOfEqualCycles(t *testing.T) {
	bins, err := jitterBins([]int64{1000, 1000, 1000}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(bins) != 1 || bins[0].Count != 3 || bins[0].Percent != 100 || bins[0].Lower != 1000-minJitterStep {
		t.Errorf("bins %+v, want one centre bin of ±%d ns holding all", bins, minJitterStep)
	}
	if _, err := jitterBins(nil, 1000); err == nil {
		t.Error("no error for no periods")
	}
}

// A CPU load above 100 % is one job outlasting its cycle: the report says
// it is a stall, with the number of cycles it took.
func TestReportExplainsALoadAbove100Percent(t *testing.T) {
	for _, c := range []struct {
		max   float64
		stall bool
	}{{2792, true}, {95, false}} {
		r := &Report{CPULoadAvg: 3.5, CPULoadMax: c.max}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		r.writeTimings(w)
		_ = w.Flush()
		got := out.String()
		if strings.Contains(got, "one cycle's job took 27.9 target cycles, a stall") != c.stall || !strings.Contains(got, "avg 3.50 %") {
			t.Errorf("max %v %%:\n%s", c.max, got)
		}
	}
}

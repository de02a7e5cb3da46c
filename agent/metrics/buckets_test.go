package metrics

import (
	"math/big"
	"strconv"
	"testing"
	"time"
)

// Every classic bucket bound prints, as the exposition writes it (the
// shortest representation that reads back as the same float64), as a
// whole number of nanoseconds: le="0.0012", never the float noise of
// le="0.0012000000000000001".
func TestBucketBoundsPrintAsExactDecimals(t *testing.T) {
	sets := map[string][]float64{"timing": timingBuckets(), "dc": dcBuckets(), "load": loadBuckets()}
	for _, target := range []time.Duration{100 * time.Microsecond, 125 * time.Microsecond, 250 * time.Microsecond,
		500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond, 10 * time.Millisecond} {
		sets["period "+target.String()] = periodBuckets(target)
	}
	billion := big.NewRat(1e9, 1)
	for name, bounds := range sets {
		for _, b := range bounds {
			le := strconv.FormatFloat(b, 'g', -1, 64)
			r, ok := new(big.Rat).SetString(le)
			if !ok {
				t.Fatalf("%s: %q does not parse", name, le)
			}
			if name != "load" && !r.Mul(r, billion).IsInt() {
				t.Errorf("%s: le=%q is not a whole number of nanoseconds", name, le)
			}
			if len(le) > 12 {
				t.Errorf("%s: le=%q: want the short decimal", name, le)
			}
		}
	}
	// The period bounds around 1 ms, exactly.
	want := map[string]bool{"0.0012": false, "0.0008": false, "0.000999": false, "0.001001": false, "0.003": false}
	for _, b := range periodBuckets(time.Millisecond) {
		if _, ok := want[strconv.FormatFloat(b, 'g', -1, 64)]; ok {
			want[strconv.FormatFloat(b, 'g', -1, 64)] = true
		}
	}
	for le, found := range want {
		if !found {
			t.Errorf("period bounds of 1 ms lack le=%q: %v", le, periodBuckets(time.Millisecond))
		}
	}
}

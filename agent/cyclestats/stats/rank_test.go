package stats

import (
	"math"
	"testing"
)

func TestNearestRank(t *testing.T) {
	tests := []struct {
		name string
		q    float64
		n    int64
		want int64
	}{
		{"p99 of 1000", 0.99, 1000, 990},
		{"p99.9 of 1000", 0.999, 1000, 999},
		{"p99.99 of 1000", 0.9999, 1000, 1000},
		{"p50 of 1", 0.5, 1, 1},
		{"p50 of 2", 0.5, 2, 1},
		{"p50 of 3", 0.5, 3, 2},
		// 0.07·100 is 7.000000000000001 in float64: a naive ceil gives 8.
		{"float product just above integer", 0.07, 100, 7},
		{"float product just above integer (p14)", 0.14, 100, 14},
		// 0.29·100 is 28.999999999999996 in float64.
		{"float product just below integer", 0.29, 100, 29},
		{"q 0 is the smallest", 0, 10, 1},
		{"negative q is the smallest", -1, 10, 1},
		{"NaN q is the smallest", math.NaN(), 10, 1},
		{"q 1 is the largest", 1, 10, 10},
		{"q above 1 is the largest", 2, 10, 10},
		{"tiny q still rank 1", 1e-9, 10, 1},
		{"no values", 0.5, 0, 0},
		{"p99.99 of 40000", 0.9999, 40000, 39996},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NearestRank(tt.q, tt.n); got != tt.want {
				t.Errorf("NearestRank(%v, %d) = %d, want %d", tt.q, tt.n, got, tt.want)
			}
		})
	}
}

func TestPercentileSorted(t *testing.T) {
	sorted := []int64{10, 20, 30, 40, 50}
	tests := []struct {
		q    float64
		want int64
	}{{0.2, 10}, {0.21, 20}, {0.5, 30}, {0.8, 40}, {0.81, 50}, {1, 50}}
	for _, tt := range tests {
		if got := PercentileSorted(sorted, tt.q); got != tt.want {
			t.Errorf("PercentileSorted(%v, %v) = %d, want %d", sorted, tt.q, got, tt.want)
		}
	}
	if got := PercentileSorted(nil, 0.5); got != 0 {
		t.Errorf("PercentileSorted(nil) = %d, want 0", got)
	}
}

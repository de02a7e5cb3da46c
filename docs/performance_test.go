package docs

import (
	"os"
	"strings"
	"testing"
)

// maxPerformanceLines bounds performance.md: today's figures, how to measure
// them and the design choices, read in a few screens. The measurements
// behind them, dated, go to performance-log.md.
const maxPerformanceLines = 300

func TestPerformancePageStaysShort(t *testing.T) {
	text, err := os.ReadFile("performance.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(text), "\n"); n >= maxPerformanceLines {
		t.Errorf("performance.md has %d lines, the limit is fewer than %d: keep today's figures, how to measure and the design choices there, and move the rest, dated, to performance-log.md", n, maxPerformanceLines)
	}
}

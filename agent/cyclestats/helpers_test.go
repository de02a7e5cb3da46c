package cyclestats

import (
	"math"

	"github.com/ecagent/ecagent/agent/cyclestats/cyclestatstest"
)

const testTarget = cyclestatstest.Target

// cycleSample and sampleStream make the samples the tests feed
// (cyclestatstest.On and Stream, on testTarget).
var (
	cycleSample  = cyclestatstest.On
	sampleStream = cyclestatstest.Stream
)

// closeTo reports whether got is within a relative 1e-9 (or absolute
// 1e-15) of want; NaN equals NaN.
func closeTo(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= math.Max(1e-15, 1e-9*math.Abs(want))
}

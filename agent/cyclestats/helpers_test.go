package cyclestats

import (
	"math"
	"time"

	"github.com/ecagent/ecagent/shm"
)

const testTarget = time.Millisecond

// cycleSample returns the sample of a cycle on schedule (deadline =
// cycle × target from base) that woke lat late, sent its frame 1 µs after
// waking, got it back rtt later and ended job after waking.
func cycleSample(cycle uint64, lat, rtt, job int64) shm.Sample {
	const base = 1_000_000_000
	deadline := base + int64(cycle)*testTarget.Nanoseconds()
	wake := deadline + lat
	send := wake + 1000
	return shm.Sample{
		Cycle:       cycle,
		Deadline:    deadline,
		Wake:        wake,
		Send:        send,
		Recv:        send + rtt,
		End:         wake + job,
		WKC:         3,
		ExpectedWKC: 3,
	}
}

// sampleStream returns a function yielding consecutive cycle samples with
// latencies, round trips and jobs cycling through fixed values, with a
// lost frame, a DC difference and a DC controller error now and then.
func sampleStream() func() *shm.Sample {
	var s shm.Sample
	var cycle uint64
	return func() *shm.Sample {
		k := int64(cycle % 1024)
		s = cycleSample(cycle, 2000+k*37, 15_000+k*11, 80_000+k*53)
		if k%97 == 0 {
			s.Flags |= shm.SampleLostFrame
		}
		if k%4 == 0 {
			s.Flags |= shm.SampleDCValid
			s.DCDiff = int32(k - 512)
		}
		if k%2 == 1 {
			s.Flags |= shm.SampleCtlValid
			s.CtlErr = int32(300 - k*3)
		}
		cycle++
		return &s
	}
}

// closeTo reports whether got is within a relative 1e-9 (or absolute
// 1e-15) of want; NaN equals NaN.
func closeTo(got, want float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= math.Max(1e-15, 1e-9*math.Abs(want))
}

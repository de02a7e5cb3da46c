// Package cyclestatstest makes the cycle samples (shm.Sample) that the
// tests of the agent's cycle figures feed (agent/cyclestats,
// agent/metrics): a cycle on schedule, and a stream of them with a lost
// frame, DC figures and controller errors now and then. It is for tests
// only.
package cyclestatstest

import (
	"time"

	"github.com/ecagent/ecagent/shm"
)

// Target is the cycle period the samples are scheduled on.
const Target = time.Millisecond

// On returns the sample of a cycle on schedule (deadline = cycle × Target
// from base) that woke lat late, sent its frame 1 µs after waking, got it
// back rtt later and ended job after waking.
func On(cycle uint64, lat, rtt, job int64) shm.Sample {
	const base = 1_000_000_000
	deadline := base + int64(cycle)*Target.Nanoseconds()
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

// Stream returns a function yielding consecutive cycle samples with
// latencies, round trips and jobs cycling through fixed values, with a
// lost frame, a DC difference and a DC controller error now and then.
// It yields the same variable each time.
func Stream() func() *shm.Sample {
	var s shm.Sample
	var cycle uint64
	return func() *shm.Sample {
		k := int64(cycle % 1024)
		s = On(cycle, 2000+k*37, 15_000+k*11, 80_000+k*53)
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

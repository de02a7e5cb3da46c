package shm

import (
	"strings"
	"unsafe"
)

// SampleSize is the size of a Sample in the ring: one cache line.
const SampleSize = 64

// Compile-time check that Sample is exactly SampleSize bytes: one of the
// two array lengths is negative otherwise.
var (
	_ [SampleSize - unsafe.Sizeof(Sample{})]byte
	_ [unsafe.Sizeof(Sample{}) - SampleSize]byte
)

// Sample is what the cycle records about one cycle. All times are
// CLOCK_MONOTONIC in nanoseconds, so the figures derive as:
// period = Wake − previous Wake, jitter = period − target period,
// wake-up latency = Wake − Deadline, job time = End − Wake,
// frame round trip = Recv − Send, CPU load = job time / period.
//
// Sample holds no pointers and has a fixed layout (pinned by
// TestGoldenLayout), because it lives in shared memory.
type Sample struct {
	// Cycle is the cycle number, counting from 0 at the cycle process's
	// start of cyclic operation.
	Cycle uint64
	// Deadline is the absolute time the cycle was scheduled to wake.
	Deadline int64
	// Wake is the time the cycle woke.
	Wake int64
	// Send is the time the cyclic frame was handed to the link.
	Send int64
	// Recv is the time the cyclic frame came back; equal to Send when
	// the frame was lost (see SampleLostFrame).
	Recv int64
	// End is the time the cycle's job ended.
	End int64
	// WKC is the working counter the frame came back with.
	WKC uint16
	// ExpectedWKC is the working counter the bus configuration expects.
	ExpectedWKC uint16
	// Flags holds what went wrong or what is valid in this cycle.
	Flags SampleFlags
	// Skipped is the number of deadlines skipped before this cycle
	// because the previous one overran them (saturating at 65535).
	Skipped uint16
	// DCDiff is the distributed-clock system time difference of one
	// slave (register 0x092C, read in turn from each clock) in
	// nanoseconds, positive when the slave's copy is ahead of the
	// reference; meaningful only when Flags has SampleDCValid.
	DCDiff int32
	// CtlErr is the error of the controller that keeps the master's cycle
	// on the distributed-clock reference time, in nanoseconds: when the
	// cyclic frame passed the reference clock, relative to when it
	// should have (positive: late); meaningful only when Flags has
	// SampleCtlValid.
	CtlErr int32
}

// SampleFlags is a set of per-cycle conditions.
type SampleFlags uint16

// Conditions a sample can carry.
const (
	// SampleLostFrame: a cyclic frame (one of the cycle's frames, or its
	// only one) did not come back in time.
	SampleLostFrame SampleFlags = 1 << iota
	// SampleWKCMismatch: the working counter differed from ExpectedWKC.
	SampleWKCMismatch
	// SampleOverrun: the job ended after the next deadline.
	SampleOverrun
	// SampleSkipped: deadlines were skipped before this cycle (Skipped > 0).
	SampleSkipped
	// SampleDCValid: DCDiff holds a measured value.
	SampleDCValid
	// SampleCtlValid: CtlErr holds a measured value (distributed clocks
	// are configured and the reference time was read this cycle).
	SampleCtlValid
	// SampleLateAnswer: the cycle discarded the first late answer of an
	// earlier cycle that lost frames — the segment's answer to a frame
	// counted lost there, come back after its deadline (delayed, not
	// dropped). Each cycle with SampleLostFrame makes one such cycle at
	// most (master.CycleResult.Stale).
	SampleLateAnswer
	// SampleAcyclic: the cycle carried acyclic datagrams (recovery,
	// mailbox, register access) in its frames or in one extra frame, so
	// an overrun of such a cycle can be told from one the host caused.
	SampleAcyclic
	// SampleAcyclicFrame: the cycle sent one extra frame for acyclic
	// datagrams its own frames had no room for, and waited for it after
	// the cyclic answers (Recv) were in.
	SampleAcyclicFrame
	// SampleYieldLate: the cycle woke late because a yield to the Go
	// scheduler in the sleep before it (the runtime asked for the cycle
	// thread's P: cycle.Engine's sleep) returned after its deadline: the
	// runtime had handed the P to another thread and gave it back too
	// late. That wait is the cycle
	// process's own, not the host timer's; how long it lasts depends on
	// the other threads of the process and on the load on their CPUs.
	SampleYieldLate
)

// sampleFlagNames names the flags in bit order for String.
var sampleFlagNames = [...]string{"lost-frame", "wkc-mismatch", "overrun", "skipped", "dc-valid", "ctl-valid", "late-answer", "acyclic", "acyclic-frame", "yield-late"}

// Has reports whether f contains every flag of g.
func (f SampleFlags) Has(g SampleFlags) bool { return f&g == g }

// String lists the flags of f joined by "|", "0" for none, and the
// unknown bits as a hexadecimal remainder.
func (f SampleFlags) String() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	for i, name := range sampleFlagNames {
		if f&(1<<i) != 0 {
			parts = append(parts, name)
			f &^= 1 << i
		}
	}
	if f != 0 {
		parts = append(parts, "0x"+hex16(uint16(f)))
	}
	return strings.Join(parts, "|")
}

// hex16 formats v as lower-case hexadecimal without leading zeros.
func hex16(v uint16) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var buf [4]byte
	i := len(buf)
	for v != 0 {
		i--
		buf[i] = digits[v&0xf]
		v >>= 4
	}
	return string(buf[i:])
}

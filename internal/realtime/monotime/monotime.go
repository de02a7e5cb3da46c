// Package monotime reads the monotonic clock the way the Go runtime does,
// through the vDSO, at no system call's cost: the one time base that the
// master's send and receive times and the cycle's deadlines and samples
// share, so that they can be compared to the nanosecond.
package monotime

import _ "unsafe" // go:linkname

// Now returns CLOCK_MONOTONIC in nanoseconds (on Linux; elsewhere the
// runtime's monotonic clock).
func Now() int64 { return nanotime() }

// nanotime is the Go runtime's monotonic clock reading, the clock behind
// time.Now's monotonic part. The runtime keeps this name and signature for
// code outside it.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

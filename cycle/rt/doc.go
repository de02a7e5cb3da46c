// Package rt holds the host real-time primitives of the cycle: the
// monotonic clock and the absolute-deadline sleep that the cycle waits on.
// Sleeping to an absolute deadline (clock_nanosleep with TIMER_ABSTIME)
// keeps a periodic schedule free of drift, which time.Sleep and
// time.Ticker do not (they are about a millisecond late on stock kernels).
package rt

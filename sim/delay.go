package sim

import (
	"sync/atomic"
	"time"
)

// ResponseDelay holds back every Nth answer of Serve, the way a congested
// switch, a slow NIC or a long cable run would: answers later than the
// master's cycle count there as lost frames. It is switched on and off at
// run time (by a test, or by `ecagent sim` on SIGUSR1); give it to a
// segment with WithResponseDelay. Faults.Delay does the same, and more,
// on any segment; the two add up.
type ResponseDelay struct {
	delay time.Duration
	every uint64
	on    atomic.Bool
	n     uint64 // answers seen while on; touched by Serve only
}

// NewResponseDelay returns a delay of d for every Nth answer (every ≤ 1:
// all), switched off.
func NewResponseDelay(d time.Duration, every int) *ResponseDelay {
	return &ResponseDelay{delay: d, every: uint64(max(every, 1))}
}

// Set switches the delay on or off. Safe from any goroutine.
func (r *ResponseDelay) Set(on bool) { r.on.Store(on) }

// On reports whether answers are being delayed.
func (r *ResponseDelay) On() bool { return r.on.Load() }

// WithResponseDelay makes Serve apply r to its answers.
func WithResponseDelay(r *ResponseDelay) Option { return func(o *options) { o.delay = r } }

// next returns how long to hold back the answer Serve is about to send:
// the delay when it is one of those to delay, else 0.
func (r *ResponseDelay) next() time.Duration {
	if r == nil || !r.on.Load() {
		return 0
	}
	r.n++
	if r.n%r.every == 0 {
		return r.delay
	}
	return 0
}

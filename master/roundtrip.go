package master

import "time"

// roundTrip estimates how long the answer to a frame on the master's own
// link takes, the way TCP estimates its retransmission timeout (RFC 6298,
// section 2): a smoothed round trip (gain 1/8) and its mean deviation
// (gain 1/4), from which a try waits the smoothed round trip plus four
// deviations. On a quiet segment that is far below the configured
// timeout, which then applies; on a host so loaded that answers come back
// late, the waits grow with what was measured instead of every frame
// being sent again and again. Its zero value has measured nothing. It is
// not safe for concurrent use (the Bus that owns the link is used by one
// goroutine at a time).
type roundTrip struct {
	srtt, rttvar time.Duration
	measured     bool
}

// observe adds one measured round trip.
func (r *roundTrip) observe(d time.Duration) {
	if !r.measured {
		r.srtt, r.rttvar, r.measured = d, d/2, true
		return
	}
	dev := r.srtt - d
	if dev < 0 {
		dev = -dev
	}
	r.rttvar += (dev - r.rttvar) / 4
	r.srtt += (d - r.srtt) / 8
}

// timeout is how long a try waits for its answer: the measured round trip
// plus four deviations, never less than floor (the configured timeout).
func (r *roundTrip) timeout(floor time.Duration) time.Duration {
	if !r.measured {
		return floor
	}
	return max(floor, r.srtt+4*r.rttvar)
}

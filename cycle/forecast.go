package cycle

// askForecast foresees when the Go runtime will next ask for the cycle's
// P, from when it last did. Sysmon wakes every 10 ms (a little more: its
// sleep's timer slack) and asks for a P whose goroutine it has seen
// running since its tick before: two ticks after each yield. The sleep
// a request cuts short says when it came (Engine.sleep); the time between
// two requests, in ticks, measures sysmon's tick. A yield of the cycle's
// own between the first of those ticks and the request moves the request
// one tick on (Engine.yieldAhead).
type askForecast struct {
	last  int64 // when the runtime last asked (ns, rt.Now); 0: not yet
	ticks int64 // sysmon ticks from last to the next request
	tick  int64 // sysmon's tick as measured; 0: not yet
}

// Bounds of a sysmon tick worth believing: a measurement outside them
// (a signal that was not sysmon's, a host that held sysmon up) is not
// taken.
const (
	sysmonTickMin = 9_900_000
	sysmonTickMax = 11_000_000
)

// asked records a request for the P at t.
func (f *askForecast) asked(t int64) {
	if f.last != 0 && f.ticks > 0 {
		if d := (t - f.last) / f.ticks; d >= sysmonTickMin && d <= sysmonTickMax {
			if f.tick == 0 {
				f.tick = d
			} else {
				f.tick += (d - f.tick) / 4
			}
		}
	}
	f.last, f.ticks = t, 2
}

// next returns when the next request is due, 0 if that is not known. A
// request that was due more than half a tick before now and did not cut
// a sleep short came while the cycle ran its job, which yielded there:
// the one after it is due two ticks later.
func (f *askForecast) next(now int64) int64 {
	if f.last == 0 || f.tick == 0 {
		return 0
	}
	for f.last+f.ticks*f.tick < now-f.tick/2 {
		f.ticks += 2
	}
	return f.last + f.ticks*f.tick
}

// yielded records a yield of the cycle's own before the due request.
func (f *askForecast) yielded() { f.ticks++ }

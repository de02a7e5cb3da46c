package cycle

import (
	"testing"
	"time"
)

// TestAskForecast: two requests two ticks apart measure sysmon's tick;
// the next is due two ticks after the last, one more for each yield of
// the cycle's own, two more for one that came unseen (in a job); an
// interval no sysmon tick explains is not taken.
func TestAskForecast(t *testing.T) {
	const ms = int64(time.Millisecond)
	var f askForecast
	if got := f.next(0); got != 0 {
		t.Fatalf("due %d with nothing measured, want 0 (unknown)", got)
	}
	f.asked(100 * ms)
	if got := f.next(100 * ms); got != 0 {
		t.Fatalf("due %d after one request, want 0 (unknown)", got)
	}
	f.asked(100*ms + 20_100_000)
	if f.tick != 10_050_000 {
		t.Fatalf("tick %d, want 10050000", f.tick)
	}
	last := 100*ms + 20_100_000
	if got, want := f.next(last), last+2*10_050_000; got != want {
		t.Errorf("due %d, want %d (two ticks on)", got, want)
	}
	f.yielded()
	if got, want := f.next(last), last+3*10_050_000; got != want {
		t.Errorf("after a yield of its own due %d, want %d (three ticks on)", got, want)
	}
	// Due at last+30.15 ms, not seen by last+40 ms: served in a job.
	if got, want := f.next(last+40*ms), last+5*10_050_000; got != want {
		t.Errorf("a request unseen: due %d, want %d (two ticks after it)", got, want)
	}
	// A signal 2 ms later is no sysmon tick: the tick stays, the
	// forecast starts from it.
	f.asked(last + 2*ms)
	if f.tick != 10_050_000 {
		t.Errorf("tick %d after a 2 ms interval, want 10050000 kept", f.tick)
	}
	if got, want := f.next(last+2*ms), last+2*ms+2*10_050_000; got != want {
		t.Errorf("due %d, want %d", got, want)
	}
	// A second measurement moves the tick a quarter of the way.
	f.asked(last + 2*ms + 2*10_090_000)
	if want := int64(10_050_000 + 40_000/4); f.tick != want {
		t.Errorf("tick %d, want %d", f.tick, want)
	}
}

// TestYieldAhead: after a cycle, the engine yields when the runtime's
// next request is due in the last quarter of the coming sleep or in the
// next job, if half a period is left; not when it is due early in the
// sleep (the hand-over has room there), not when it is unknown, not for a
// sleep that gives its P up, not for periods over forecastPeriod.
func TestYieldAhead(t *testing.T) {
	const us = int64(time.Microsecond)
	const tick = 10_050_000
	for _, tc := range []struct {
		name   string
		keepP  bool
		period time.Duration
		slack  int64 // from the cycle's end to the next deadline
		due    int64 // request due, from the next deadline; 1: unknown
		want   bool
	}{
		{"due late in the sleep", true, time.Millisecond, 900 * us, -100 * us, true},
		{"due in the next job", true, time.Millisecond, 900 * us, 50 * us, true},
		{"due early in the sleep", true, time.Millisecond, 900 * us, -600 * us, false},
		{"due after the next job", true, time.Millisecond, 900 * us, 400 * us, false},
		{"too little room", true, time.Millisecond, 400 * us, -100 * us, false},
		{"unknown", true, time.Millisecond, 900 * us, 1, false},
		{"sleep gives the P up", false, time.Millisecond, 900 * us, -100 * us, false},
		{"long period", true, 4 * time.Millisecond, 3600 * us, -400 * us, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &Engine{cfg: Config{Period: tc.period, SleepKeepsP: tc.keepP}}
			yields := 0
			e.yield = func() { yields++ }
			end := int64(time.Second)
			next := end + tc.slack
			if tc.due != 1 {
				e.asks = askForecast{last: next + tc.due - 2*tick, ticks: 2, tick: tick}
			}
			e.yieldAhead(end, next)
			if got := yields == 1; got != tc.want {
				t.Fatalf("yielded %v, want %v", got, tc.want)
			}
			if tc.want && (e.yields != 1 || e.asks.ticks != 3) {
				t.Errorf("yields %d, forecast ticks %d after the yield, want 1 and 3", e.yields, e.asks.ticks)
			}
		})
	}
}

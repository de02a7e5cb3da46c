package cycle

import (
	"math/rand/v2"
	"testing"
)

func TestDCSyncPhaseError(t *testing.T) {
	c := newDCSync(1_000_000)
	tests := []struct {
		t    uint64
		want int64
	}{
		{0, 0},
		{5_000_000, 0},
		{5_000_123, 123},
		{5_499_999, 499_999},
		{5_500_000, -500_000},
		{5_999_900, -100},
	}
	for _, tt := range tests {
		if got := c.phaseError(tt.t); got != tt.want {
			t.Errorf("phaseError(%d) = %d, want %d", tt.t, got, tt.want)
		}
	}
}

// simulateDCSync runs the controller against a master whose clock runs at
// a rate drift (ppm) relative to the reference, with a starting phase and
// random wake-up noise, and returns the errors of each cycle.
func simulateDCSync(period int64, driftPPM float64, start int64, noise int64, cycles int) []int64 {
	c := newDCSync(period)
	rng := rand.New(rand.NewPCG(1, 2))
	// Reference time at which the master's frame passes the reference,
	// and the master's own schedule in its clock.
	master := float64(start)
	errs := make([]int64, 0, cycles)
	next := 0.0
	for range cycles {
		jitter := 0.0
		if noise > 0 {
			jitter = float64(rng.Int64N(noise))
		}
		ref := uint64(10*period) + uint64(master+jitter)
		e, u := c.update(ref)
		errs = append(errs, e)
		// The next frame: one period of the master's clock (seen in
		// reference time, stretched by the drift) plus the correction.
		next = float64(period+u) * (1 + driftPPM*1e-6)
		master += next
	}
	return errs
}

func TestDCSyncLocksAndHoldsAgainstDrift(t *testing.T) {
	const period = 1_000_000
	tests := []struct {
		name   string
		drift  float64
		start  int64
		noise  int64
		settle int   // cycles allowed to lock
		bound  int64 // |error| after settling, ns
	}{
		{"in phase, no drift", 0, 0, 0, 1, 1},
		// The proportional part rounds errors under 128/13 ≈ 10 ns to no
		// correction: the loop settles within that dead band.
		{"late start, +100 ppm", 100, 300_000, 0, 200, 12},
		{"early start, -100 ppm", -100, -420_000, 0, 200, 12},
		{"small start error, +100 ppm", 100, 40_000, 0, 200, 12},
		// With uniform 0..20 µs wake-up noise the error stays within the
		// noise plus what the controller passes on of it.
		{"noisy host, +50 ppm", 50, 123_456, 20_000, 200, 30_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := simulateDCSync(period, tt.drift, tt.start, tt.noise, 2000)
			for i, e := range errs[tt.settle:] {
				if abs64(e) > tt.bound {
					t.Fatalf("cycle %d: error %d ns, want |error| ≤ %d after %d cycles", i+tt.settle, e, tt.bound, tt.settle)
				}
			}
		})
	}
}

func TestDCSyncBoundsCorrection(t *testing.T) {
	c := newDCSync(1_000_000)
	c.update(0) // lock
	// An error under a quarter period is not jumped out of: the step is
	// bounded, however long the error persists.
	reached := false
	for range 100 {
		_, u := c.update(240_000)
		if u < -c.maxStep || u > 0 {
			t.Fatalf("correction %d, want within [%d, 0]", u, -c.maxStep)
		}
		reached = reached || u == -c.maxStep
	}
	if !reached {
		t.Fatalf("a persistent error of 240 µs never reached the bound %d", c.maxStep)
	}
	// Beyond a quarter period the controller re-locks in one step.
	e, u := c.update(10_000_000 + 400_000)
	if e != 400_000 || u != -400_000 {
		t.Fatalf("re-lock: error %d correction %d, want 400000 and -400000", e, u)
	}
}

func TestDCSyncUpdateDoesNotAllocate(t *testing.T) {
	c := newDCSync(250_000)
	var ref uint64 = 1 << 40
	if n := testing.AllocsPerRun(1000, func() { ref += 250_003; c.update(ref) }); n != 0 {
		t.Fatalf("update allocates %v times", n)
	}
}

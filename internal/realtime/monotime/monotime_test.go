package monotime

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNowIsClockMonotonic: Now reads CLOCK_MONOTONIC itself, not a clock
// from another origin.
func TestNowIsClockMonotonic(t *testing.T) {
	for range 100 {
		a := Now()
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Skip("no CLOCK_MONOTONIC:", err)
		}
		b := Now()
		if c := ts.Nano(); a <= c && c <= b {
			return
		}
	}
	t.Error("CLOCK_MONOTONIC never fell between two readings of Now")
}

// TestNowAdvances: Now moves on with time.
func TestNowAdvances(t *testing.T) {
	a := Now()
	time.Sleep(2 * time.Millisecond)
	if d := Now() - a; d < int64(2*time.Millisecond) {
		t.Errorf("Now advanced %d ns over a 2 ms sleep", d)
	}
}

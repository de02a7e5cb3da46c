package rt

import "testing"

func TestSleepUntilReachesDeadline(t *testing.T) {
	for _, d := range []int64{0, 200_000, 1_000_000} {
		deadline := Now() + d
		SleepUntil(deadline)
		if now := Now(); now < deadline {
			t.Errorf("woke %d ns before a %d ns deadline", deadline-now, d)
		}
	}
	// A deadline in the past returns at once (well within a second here).
	start := Now()
	SleepUntil(start - 1_000_000_000)
	if Now()-start > 1_000_000_000 {
		t.Error("sleep to a past deadline blocked")
	}
}

func TestClockAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { SleepUntil(Now() + 1000) }); n != 0 {
		t.Errorf("Now+SleepUntil allocate %v times", n)
	}
}

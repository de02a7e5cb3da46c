package rt

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

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

// TestSleepUntilSurvivesSignals interrupts the sleeping thread with
// signals (the runtime's own preemption signal, SIGURG, does this all the
// time) and checks it never wakes before its deadline.
func TestSleepUntilSurvivesSignals(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := unix.Gettid()
	pid := unix.Getpid()
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				_ = unix.Tgkill(pid, tid, unix.SIGURG)
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	defer close(stop)
	for range 50 {
		deadline := Now() + 2_000_000
		SleepUntil(deadline)
		if now := Now(); now < deadline {
			t.Fatalf("woke %v before the deadline", time.Duration(deadline-now))
		}
	}
}

func TestClockAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { SleepUntil(Now() + 1000) }); n != 0 {
		t.Errorf("Now+SleepUntil allocate %v times", n)
	}
}

// TestSleepKeepsP runs the deadline and signal checks with the raw sleep
// that keeps the P.
func TestSleepKeepsP(t *testing.T) {
	SleepKeepsP(true)
	defer SleepKeepsP(false)
	TestSleepUntilReachesDeadline(t)
	TestSleepUntilSurvivesSignals(t)
	if n := testing.AllocsPerRun(100, func() { SleepUntil(Now() + 1000) }); n != 0 {
		t.Errorf("the raw sleep allocates %v times", n)
	}
}

package rt

import (
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sleeps are the two ways to sleep to a deadline; every test runs both.
var sleeps = []struct {
	name  string
	sleep func(int64)
}{{"SleepUntil", SleepUntil}, {"SleepUntilKeepingP", SleepUntilKeepingP}}

func TestSleepUntilReachesDeadline(t *testing.T) {
	for _, s := range sleeps {
		t.Run(s.name, func(t *testing.T) {
			for _, d := range []int64{0, 200_000, 1_000_000} {
				deadline := Now() + d
				s.sleep(deadline)
				if now := Now(); now < deadline {
					t.Errorf("woke %d ns before a %d ns deadline", deadline-now, d)
				}
			}
			// A deadline in the past returns at once (well within a second here).
			start := Now()
			s.sleep(start - 1_000_000_000)
			if Now()-start > 1_000_000_000 {
				t.Error("sleep to a past deadline blocked")
			}
		})
	}
}

// TestSleepUntilSurvivesSignals interrupts the sleeping thread with
// signals (the runtime's own preemption signal, SIGURG, does this all the
// time) and checks it never wakes before its deadline.
func TestSleepUntilSurvivesSignals(t *testing.T) {
	for _, s := range sleeps {
		t.Run(s.name, func(t *testing.T) {
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
				s.sleep(deadline)
				if now := Now(); now < deadline {
					t.Fatalf("woke %v before the deadline", time.Duration(deadline-now))
				}
			}
		})
	}
}

func TestClockAllocatesNothing(t *testing.T) {
	for _, s := range sleeps {
		if n := testing.AllocsPerRun(100, func() { s.sleep(Now() + 1000) }); n != 0 {
			t.Errorf("Now+%s allocate %v times", s.name, n)
		}
	}
}

// TestNowIsClockMonotonic checks that Now, read through the runtime's
// vDSO clock, is CLOCK_MONOTONIC as clock_nanosleep's TIMER_ABSTIME
// deadlines and the kernel's own timestamps count it: it lies between
// two clock_gettime system calls made around it.
func TestNowIsClockMonotonic(t *testing.T) {
	for range 1000 {
		var a, b unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &a)
		now := Now()
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &b)
		if now < a.Nano() || now > b.Nano() {
			t.Fatalf("Now %d outside [%d, %d] of CLOCK_MONOTONIC", now, a.Nano(), b.Nano())
		}
	}
}

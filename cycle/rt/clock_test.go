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

// TestSleepUntilInterruptedSaysSo: a signal cuts SleepUntilInterrupted
// short and it says so (the cycle yields then, see cycle.Engine's sleep);
// uninterrupted, it sleeps to its deadline and says it did. The signal is
// the runtime's own preemption signal, SIGURG, sent until the sleep ends:
// one sent before the thread is in its system call interrupts nothing.
func TestSleepUntilInterruptedSaysSo(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	deadline := Now() + 1_000_000
	if SleepUntilInterrupted(deadline) {
		// A stray signal of the runtime's own: try once more.
		for SleepUntilInterrupted(deadline) {
		}
	}
	if now := Now(); now < deadline {
		t.Fatalf("returned %v before its deadline, not interrupted", time.Duration(deadline-now))
	}
	if SleepUntilInterrupted(Now() - 1) {
		t.Error("a deadline in the past reported an interruption")
	}

	tid, pid := unix.Gettid(), unix.Getpid()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = unix.Tgkill(pid, tid, unix.SIGURG)
			}
		}
	}()
	far := Now() + int64(time.Minute)
	if !SleepUntilInterrupted(far) {
		t.Fatal("slept to a deadline a minute away under signals every millisecond")
	}
	if Now() >= far {
		t.Fatal("interrupted only after its deadline")
	}
}

func TestSleepUntilInterruptedAllocatesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() {
		for SleepUntilInterrupted(Now() + 1000) {
		}
		SpinUntil(Now() + 1000)
	}); n != 0 {
		t.Errorf("SleepUntilInterrupted and SpinUntil allocate %v times", n)
	}
}

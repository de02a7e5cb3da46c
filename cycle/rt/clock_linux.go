package rt

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Now returns CLOCK_MONOTONIC in nanoseconds, the time base of every
// deadline and sample of the cycle.
func Now() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// SleepUntil blocks the calling thread until CLOCK_MONOTONIC reaches
// deadline (ns). It returns at once for a deadline in the past and resumes
// after signals. It does not allocate.
func SleepUntil(deadline int64) {
	ts := unix.NsecToTimespec(deadline)
	for {
		// The raw system call reports failure as -errno, which Syscall6
		// turns into errno. EINTR is frequent: the Go runtime interrupts
		// threads with SIGURG to preempt goroutines. With TIMER_ABSTIME
		// the same deadline is simply slept to again.
		_, _, errno := unix.Syscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno != unix.EINTR {
			return
		}
	}
}

package rt

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/internal/realtime/monotime"
)

// Now returns CLOCK_MONOTONIC in nanoseconds, the time base of every
// deadline and sample of the cycle. It is the runtime's own clock read
// through the vDSO, not a system call: unix.ClockGettime is one, and the
// cycle read the clock twice a cycle (on a paravirtualised guest a system
// call costs several µs; strace counted 2 of the cycle thread's 6.3 calls
// per cycle).
// It is the master's clock too (internal/realtime/monotime), so a sample's send
// and receive times compare with its deadline and wake-up to the ns.
func Now() int64 { return monotime.Now() }

// SleepUntil blocks the calling thread until CLOCK_MONOTONIC reaches
// deadline (ns). It returns at once for a deadline in the past and resumes
// after signals. It does not allocate.
func SleepUntil(deadline int64) { sleepUntil(deadline, false) }

// SleepUntilKeepingP is SleepUntil without handing the Go scheduler's P
// off: the raw system call, for which the runtime does not enter its
// syscall state, so sysmon has no P to retake and the waking thread no P
// to get back (measured on the cycle process at 1 ms: 48.9 → 36.9 µs of
// CPU and 4.97 → 2.56 context switches per cycle; docs/performance.md).
// It is for one locked thread in a process with GOMAXPROCS ≥ 2: the P it
// holds is lost to every other goroutine while it sleeps, and a
// stop-the-world waits until the sleep ends (one period at most).
func SleepUntilKeepingP(deadline int64) { sleepUntil(deadline, true) }

func sleepUntil(deadline int64, raw bool) {
	ts := unix.NsecToTimespec(deadline)
	for {
		// The raw system call reports failure as -errno, which Syscall6
		// turns into errno. EINTR is frequent: the Go runtime interrupts
		// threads with SIGURG to preempt goroutines. With TIMER_ABSTIME
		// the same deadline is simply slept to again.
		var errno unix.Errno
		if raw {
			_, _, errno = unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
				uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		} else {
			_, _, errno = unix.Syscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
				uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		}
		if errno != unix.EINTR {
			return
		}
	}
}

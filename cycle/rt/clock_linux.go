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

// SleepUntilInterrupted is SleepUntilKeepingP, except that it returns
// when a signal interrupts the sleep, and says so: true if the sleep was
// cut short, false once deadline is reached. The caller sleeps again.
//
// In a Go process the signal is mostly the runtime's own SIGURG, its
// request for the goroutine's P: sysmon's preemption of a goroutine that
// has held its P for 10 ms, or a stop-the-world. A goroutine in a raw
// system call cannot be preempted there; the runtime leaves the request
// set, and the goroutine yields at the next function call it makes. A
// caller that makes one right away yields inside its sleep, with the rest
// of the sleep for the hand-over, instead of after it, when the next
// deadline has come (cycle.Engine's sleep). It does not allocate.
func SleepUntilInterrupted(deadline int64) bool {
	ts := unix.NsecToTimespec(deadline)
	_, _, errno := unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
		uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return errno == unix.EINTR
}

// SpinUntil busy-waits until CLOCK_MONOTONIC reaches deadline (ns),
// reading the vDSO's clock: no system call, and a core's worth of CPU.
func SpinUntil(deadline int64) {
	for Now() < deadline {
	}
}

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

package spsc

import (
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Futex operations on a word private to this process.
// (linux/futex.h: FUTEX_WAIT 0, FUTEX_WAKE 1, FUTEX_PRIVATE_FLAG 128; x/sys
// does not name them.)
const (
	futexWaitPrivate = 0 | 128
	futexWakePrivate = 1 | 128
)

// sleep blocks the calling thread while *word == val, at most timeout.
// It is an ordinary (not raw) system call: the runtime hands the
// goroutine's P to other goroutines meanwhile.
func sleep(word *atomic.Uint32, val uint32, timeout time.Duration) {
	ts := unix.NsecToTimespec(int64(timeout))
	_, _, _ = unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWaitPrivate,
		uintptr(val), uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// wake wakes every thread sleeping on word. The raw system call: it does
// not block, so the caller (the cycle thread) keeps its P.
func wake(word *atomic.Uint32) {
	_, _, _ = unix.RawSyscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(word)), futexWakePrivate,
		uintptr(1<<31-1), 0, 0, 0)
}

package test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// hogEnv, when set, makes the test binary the injector of the spike
// tests (hogMain): "cpu,priority,burst,every,for,name" — a SCHED_FIFO
// thread named name pinned to cpu spins for burst every every, for for,
// then exits.
const hogEnv = "ECAGENT_TEST_SPIKE_HOG"

// hogMain runs the injector described by spec; it prints its thread's id
// and "go" before the first burst, "burst START END" (CLOCK_MONOTONIC ns)
// after each, and returns its exit code.
func hogMain(spec string) int {
	f := strings.Split(spec, ",")
	if len(f) != 6 {
		fmt.Fprintln(os.Stderr, "hog: want cpu,priority,burst,every,for,name")
		return 2
	}
	cpu, _ := strconv.Atoi(f[0])
	prio, _ := strconv.Atoi(f[1])
	burst, _ := time.ParseDuration(f[2])
	every, _ := time.ParseDuration(f[3])
	total, _ := time.ParseDuration(f[4])
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Fprintln(os.Stderr, "hog: affinity:", err)
		return 1
	}
	if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(unsafePointer(f[5]))), 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, "hog: name:", err)
		return 1
	}
	if prio > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			fmt.Fprintln(os.Stderr, "hog: SCHED_FIFO:", err)
			return 1
		}
	}
	fmt.Printf("%d go\n", unix.Gettid())
	end := time.Now().Add(total)
	for next := time.Now().Add(every); next.Before(end); next = next.Add(every) {
		time.Sleep(time.Until(next))
		start := monoNS()
		for spin := time.Now().Add(burst); time.Now().Before(spin); {
		}
		fmt.Printf("burst %d %d\n", start, monoNS())
	}
	return 0
}

// monoNS is CLOCK_MONOTONIC in ns, the clock of the cycle's samples.
func monoNS() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// unsafePointer returns a pointer to a NUL-terminated copy of s.
func unsafePointer(s string) *byte {
	b, _ := unix.BytePtrFromString(s)
	return b
}

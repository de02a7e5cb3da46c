package test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// injectorSpec splits the comma spec of the injector who (hogMain,
// floodMain, compactMain) into the fields want names
// ("cpu,priority,..."); on another count it says what it wants on stderr
// and returns false.
func injectorSpec(who, spec, want string) ([]string, bool) {
	f := strings.Split(spec, ",")
	if len(f) != strings.Count(want, ",")+1 {
		fmt.Fprintf(os.Stderr, "%s: want %s\n", who, want)
		return nil, false
	}
	return f, true
}

// nameThread locks the injector to its thread and names the thread, the
// name the spikes' causes give it.
func nameThread(name string) error {
	runtime.LockOSThread()
	p, err := unix.BytePtrFromString(name)
	if err == nil {
		err = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(p)), 0, 0, 0)
	}
	if err != nil {
		return fmt.Errorf("name: %w", err)
	}
	return nil
}

// pinThread locks the injector to its thread and pins the thread to cpu.
func pinThread(cpu int) error {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("affinity: %w", err)
	}
	return nil
}

// runBursts prints the thread's id and "go", then every every until total
// has passed runs step over and over for burst and prints "burst START
// END" (CLOCK_MONOTONIC ns) after it, the lines startInjector reads. It
// stops at step's first error.
func runBursts(burst, every, total time.Duration, step func() error) error {
	fmt.Printf("%d go\n", unix.Gettid())
	end := time.Now().Add(total)
	for next := time.Now().Add(every); next.Before(end); next = next.Add(every) {
		time.Sleep(time.Until(next))
		start := monoNS()
		for stop := time.Now().Add(burst); time.Now().Before(stop); {
			if err := step(); err != nil {
				return err
			}
		}
		fmt.Printf("burst %d %d\n", start, monoNS())
	}
	return nil
}

// monoNS is CLOCK_MONOTONIC in ns, the clock of the cycle's samples.
func monoNS() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

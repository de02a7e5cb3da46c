package test

import (
	"fmt"
	"os"
	"strconv"
	"time"

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
	f, ok := injectorSpec("hog", spec, "cpu,priority,burst,every,for,name")
	if !ok {
		return 2
	}
	cpu, _ := strconv.Atoi(f[0])
	prio, _ := strconv.Atoi(f[1])
	burst, _ := time.ParseDuration(f[2])
	every, _ := time.ParseDuration(f[3])
	total, _ := time.ParseDuration(f[4])
	if err := pinThread(cpu); err != nil {
		fmt.Fprintln(os.Stderr, "hog:", err)
		return 1
	}
	if err := nameThread(f[5]); err != nil {
		fmt.Fprintln(os.Stderr, "hog:", err)
		return 1
	}
	if prio > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
		if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
			fmt.Fprintln(os.Stderr, "hog: SCHED_FIFO:", err)
			return 1
		}
	}
	// The burst spins: nothing to do but to keep the core.
	_ = runBursts(burst, every, total, func() error { return nil })
	return 0
}

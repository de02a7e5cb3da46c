package rt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Options says how the cycle thread should be set up. Each setting is
// attempted independently; a host that refuses one still gets the others.
type Options struct {
	// Priority is the SCHED_FIFO priority (1–99); 0 leaves the thread's
	// scheduling policy alone.
	Priority int
	// Core pins the thread to one CPU and keeps every other thread of
	// the process, and those it starts later, off that CPU (AvoidCore),
	// as isolcpus does on a target; negative means no pinning. A thread
	// of the process on the real-time thread's CPU could stall it: the Go
	// runtime waits for some of its own states by spinning, for example a
	// goroutine leaving a system call while the garbage collector scans
	// its stack, and under SCHED_FIFO it spins while the thread it waits
	// for, preempted on the same CPU, cannot run (see ProcessFIFO).
	Core int
	// LockMemory locks every page the process has touched so far (those
	// in its page tables: the code, data, stacks and heap bring-up used)
	// and every page mapped later as soon as it is first touched
	// (mlockall MCL_FUTURE with MCL_ONFAULT), so that no page the cycle
	// uses is ever paged out and the steady state, which touches no new
	// memory, takes no page fault. What was mapped but never touched (most
	// of the binary, reserved address space) stays unlocked and
	// non-resident. On-fault matters for what comes later: a thread
	// created by the runtime (8 MiB of stack with cgo) or a heap arena
	// would otherwise be resident and locked in full the moment it is
	// mapped. Kernels before 4.4 (no MCL_ONFAULT) lock future mappings in
	// full.
	LockMemory bool
	// DMALatency holds /dev/cpu_dma_latency at 0 µs while the returned
	// Setup is open, keeping CPUs out of deep C-states.
	DMALatency bool
}

// Setting names, as used in Result and in the exported metrics.
const (
	SettingSchedFIFO  = "sched_fifo"
	SettingAffinity   = "affinity"
	SettingMlock      = "mlock"
	SettingDMALatency = "dma_latency"
)

// Result is the outcome of one setting.
type Result struct {
	Setting   string
	Requested bool  // false when Options did not ask for it
	Err       error // nil when applied
}

// Applied reports whether the setting was asked for and is in force.
func (r Result) Applied() bool { return r.Requested && r.Err == nil }

// Setup is what Apply did; Close undoes it for the thread and releases
// what it holds (the /dev/cpu_dma_latency file: the kernel drops the
// request when it closes).
type Setup struct {
	Results []Result
	dma     *os.File
	// policy and cpus are the thread's scheduling and CPU set before
	// Apply changed them (nil where it did not).
	policy *unix.SchedAttr
	cpus   *unix.CPUSet
	// unknown names the settings Apply changed without having read what
	// they were before (the host refused the read): Close cannot restore
	// them, and says so.
	unknown []string
}

// Apply sets up the calling thread for the cycle: SCHED_FIFO, CPU
// affinity, locked memory and the DMA latency request. The caller must have
// called runtime.LockOSThread, since priority and affinity are per thread.
// Settings the host refuses (no privilege, no RT budget in a container) are
// reported in the results, not returned as an error: the cycle runs anyway
// and says so.
func Apply(o Options) *Setup {
	s := &Setup{}
	if o.Priority > 0 {
		if attr, err := unix.SchedGetAttr(0, 0); err == nil {
			s.policy = attr
		}
	}
	if o.Core >= 0 {
		var set unix.CPUSet
		if unix.SchedGetaffinity(0, &set) == nil {
			s.cpus = &set
		}
	}
	s.Results = append(s.Results, Result{Setting: SettingSchedFIFO, Requested: o.Priority > 0, Err: when(o.Priority > 0, func() error {
		return setFIFO(o.Priority)
	})})
	s.Results = append(s.Results, Result{Setting: SettingAffinity, Requested: o.Core >= 0, Err: when(o.Core >= 0, func() error {
		return pin(o.Core)
	})})
	s.Results = append(s.Results, Result{Setting: SettingMlock, Requested: o.LockMemory, Err: when(o.LockMemory, func() error {
		return lockMemory()
	})})
	s.Results = append(s.Results, Result{Setting: SettingDMALatency, Requested: o.DMALatency, Err: when(o.DMALatency, func() (err error) {
		s.dma, err = holdDMALatency()
		return err
	})})
	// Close restores only what was changed, and tells what it cannot.
	for _, r := range s.Results {
		switch {
		case r.Applied() && r.Setting == SettingSchedFIFO && s.policy == nil,
			r.Applied() && r.Setting == SettingAffinity && s.cpus == nil:
			s.unknown = append(s.unknown, r.Setting)
		case r.Applied():
		case r.Setting == SettingSchedFIFO:
			s.policy = nil
		case r.Setting == SettingAffinity:
			s.cpus = nil
		}
	}
	return s
}

func when(requested bool, f func() error) error {
	if !requested {
		return nil
	}
	return f()
}

// Close gives the thread back the scheduling policy and the CPUs it had
// before Apply, and releases the DMA latency request. Call it on the
// thread Apply set up, before runtime.UnlockOSThread: an unlocked thread
// goes back to the Go runtime, which runs any goroutine on it, its own
// workers included; left at SCHED_FIFO on the cycle's core it would run
// them there above everything else, and a garbage collector's worker
// that waits for a goroutine of a lower priority spins (see ProcessFIFO).
// Safe to call twice. It returns nil, allocating nothing, only when the
// thread is as it was before Apply: a caller that would give the thread
// back to the runtime (runtime.UnlockOSThread) keeps it locked otherwise,
// so that it ends with its goroutine.
func (s *Setup) Close() error {
	var errs []error
	for _, setting := range s.unknown {
		errs = append(errs, fmt.Errorf("restore %s: its setting before Apply was not read", setting))
	}
	if s.policy != nil {
		if err := unix.SchedSetAttr(0, s.policy, 0); err != nil {
			errs = append(errs, fmt.Errorf("restore scheduling policy %d: %w", s.policy.Policy, err))
		}
		s.policy = nil
	}
	if s.cpus != nil {
		if err := unix.SchedSetaffinity(0, s.cpus); err != nil {
			errs = append(errs, fmt.Errorf("restore CPU affinity: %w", err))
		}
		s.cpus = nil
	}
	if s.dma != nil {
		if err := s.dma.Close(); err != nil {
			errs = append(errs, err)
		}
		s.dma = nil
	}
	return errors.Join(errs...) // nil, allocating nothing, when all went well
}

// Refused returns the settings that were requested but not applied.
func (s *Setup) Refused() []Result {
	var out []Result
	for _, r := range s.Results {
		if r.Requested && r.Err != nil {
			out = append(out, r)
		}
	}
	return out
}

// lockMemory locks the pages the process has touched (bring-up has run
// the cycle's code and built its data by now) and every page mapped later
// as it is first touched. It does not lock the current mappings in full
// (mlockall MCL_CURRENT): that faults in and pins the whole binary, Go
// crypto's 32 MiB DRBG state in BSS, the 32 MiB heap index and the
// runtime's reservations, none of which the cycle uses (VmRSS 98 MiB and
// VmLck 1.25 GiB with it, 17.5 and 17.2 MiB without; docs/performance-log.md).
//
// Later mappings are locked only where no limit can refuse them: with
// CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK. Otherwise the kernel counts
// each later mapping at its full size against the limit (on-fault or not)
// and refuses the mmap once they add up, and a Go runtime refused a heap
// mapping ends the process ("cannot map pages in arena address space") —
// an unprivileged container with the default 8 MiB would lose its cycle
// at the first heap growth after bring-up. There the touched pages stay
// locked and the result says that later ones are not.
//
// A binary linked with the C library (cgo) does not lock later mappings either: the
// runtime's threads started after this have C stacks of 8 MiB each, and
// the kernel counts a locked mapping at its full size (on-fault or not),
// so VmLck grew to 144–360 MiB with a few threads of 9 MiB resident
// (docs/performance-log.md). Build the cycle program with CGO_ENABLED=0,
// as the release image does, to have both.
func lockMemory() error {
	future := futureLockUnlimited() // first: it may raise the limit
	if err := lockResident(); err != nil {
		return err
	}
	if future != nil {
		return future
	}
	if pthreadStacks() {
		return cgoFutureError{}
	}
	return lockFuture()
}

// cgoFutureError says why a binary built with cgo locks only the pages
// touched so far.
type cgoFutureError struct{}

func (cgoFutureError) Error() string {
	return "pages touched so far are locked, memory mapped later is not: this program is built with cgo, whose threads' 8 MiB C stacks would each count in full as locked memory (VmLck); build it with CGO_ENABLED=0, as the release image is"
}

// lockFuture locks mappings made from now on, page by page as they are
// touched. (MCL_FUTURE without MCL_CURRENT leaves the current mappings
// alone.)
func lockFuture() error {
	err := unix.Mlockall(unix.MCL_FUTURE | unix.MCL_ONFAULT)
	if errors.Is(err, unix.EINVAL) {
		err = unix.Mlockall(unix.MCL_FUTURE) // before Linux 4.4: in full
	}
	if err != nil {
		return fmt.Errorf("mlockall of future mappings: %w", err)
	}
	return nil
}

func setFIFO(prio int) error { return setThreadFIFO(0, prio) }

// setThreadFIFO gives thread tid (0: the calling one) SCHED_FIFO at prio.
func setThreadFIFO(tid, prio int) error {
	if prio < 1 || prio > 99 {
		return fmt.Errorf("SCHED_FIFO priority %d: want 1 to 99", prio)
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("SCHED_FIFO priority %d: %w (needs CAP_SYS_NICE or RLIMIT_RTPRIO, and an RT budget in the cgroup)", prio, err)
		}
		return fmt.Errorf("SCHED_FIFO priority %d: %w", prio, err)
	}
	return nil
}

func pin(core int) error {
	// The others first: a thread the runtime starts from this one
	// meanwhile inherits the set without the core.
	if err := AvoidCore(core); err != nil && !errors.Is(err, errOnlyCore) {
		return err
	}
	var set unix.CPUSet
	set.Set(core)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("pin to CPU %d: %w", core, err)
	}
	return nil
}

// holdDMALatency writes 0 to /dev/cpu_dma_latency and keeps it open: the
// PM QoS request lasts as long as the file does.
func holdDMALatency() (*os.File, error) {
	f, err := os.OpenFile("/dev/cpu_dma_latency", os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("/dev/cpu_dma_latency: %w", err)
	}
	var zero [4]byte
	binary.NativeEndian.PutUint32(zero[:], 0)
	if _, err := f.Write(zero[:]); err != nil {
		f.Close()
		return nil, fmt.Errorf("/dev/cpu_dma_latency: %w", err)
	}
	return f, nil
}

// SleepUntilSpin sleeps until spin ns before deadline and busy-waits the
// rest: the kernel's wake-up latency then lands in the spin budget instead
// of the cycle. It costs spin/period of a core. spin ≤ 0 is SleepUntil.
// With keepP the sleep keeps the goroutine's P (SleepUntilKeepingP).
func SleepUntilSpin(deadline, spin int64, keepP bool) {
	sleep := SleepUntil
	if keepP {
		sleep = SleepUntilKeepingP
	}
	if spin <= 0 {
		sleep(deadline)
		return
	}
	sleep(deadline - spin)
	SpinUntil(deadline)
}

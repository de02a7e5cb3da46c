package rt

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestApplyNothingRequested(t *testing.T) {
	s := Apply(Options{Core: -1})
	defer s.Close()
	if len(s.Results) != 4 || len(s.Refused()) != 0 {
		t.Fatalf("results %+v", s.Results)
	}
	for _, r := range s.Results {
		if r.Requested || r.Applied() {
			t.Errorf("%s requested/applied without being asked", r.Setting)
		}
	}
}

func TestApplyBadPriorityIsRefusedNotFatal(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s := Apply(Options{Priority: 120, Core: -1})
	defer s.Close()
	if r := s.Refused(); len(r) != 1 || r[0].Setting != SettingSchedFIFO {
		t.Errorf("refused %+v", r)
	}
}

// TestCloseSaysWhatItCannotRestore: a setting Apply changed without having
// read its earlier value cannot be restored, and Close says so every time
// (a caller then keeps the thread locked, to end with its goroutine,
// rather than give it back to the runtime as it is); nothing else fails.
func TestCloseSaysWhatItCannotRestore(t *testing.T) {
	s := &Setup{unknown: []string{SettingSchedFIFO}}
	for range 2 {
		if err := s.Close(); err == nil || !strings.Contains(err.Error(), SettingSchedFIFO) {
			t.Errorf("Close of a thread whose policy before Apply is unknown: %v, want an error naming %s", err, SettingSchedFIFO)
		}
	}
	if err := Apply(Options{Core: -1}).Close(); err != nil {
		t.Errorf("Close after Apply of nothing: %v", err)
	}
}

// restoreProcessCPUs returns the CPUs of the process now and gives every
// thread of it those CPUs, and the runtime its GOMAXPROCS, back when t
// ends: pinning a thread moves all the others off its core (AvoidCore).
func restoreProcessCPUs(t *testing.T) unix.CPUSet {
	t.Helper()
	var cpus unix.CPUSet
	if err := unix.SchedGetaffinity(0, &cpus); err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		if err := setThreadsAffinity(&cpus); err != nil {
			t.Error(err)
		}
		runtime.GOMAXPROCS(procs)
	})
	return cpus
}

// TestApplyAsRoot sets every setting on a throwaway locked thread (the
// goroutine exits without unlocking, so the thread dies with it).
func TestApplyAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SCHED_FIFO and mlockall need root (or CAP_SYS_NICE, CAP_IPC_LOCK)")
	}
	orig := restoreProcessCPUs(t)
	type outcome struct {
		refused []Result
		policy  int
		cpus    int
		cpu0    bool
		tid     int
	}
	done := make(chan outcome)
	go func() {
		runtime.LockOSThread()
		s := Apply(Options{Priority: 10, Core: 0, LockMemory: false, DMALatency: true})
		defer s.Close()
		o := outcome{tid: unix.Gettid()}
		o.refused = s.Refused()
		attr, err := unix.SchedGetAttr(0, 0)
		if err == nil {
			o.policy = int(attr.Policy)
		}
		var set unix.CPUSet
		if unix.SchedGetaffinity(0, &set) == nil {
			o.cpus, o.cpu0 = set.Count(), set.IsSet(0)
		}
		done <- o
	}()
	o := <-done
	if len(o.refused) != 0 {
		t.Errorf("refused as root: %+v", o.refused)
	}
	if o.policy != unix.SCHED_FIFO || o.cpus != 1 || !o.cpu0 {
		t.Errorf("thread policy %d, %d CPUs (CPU 0: %v)", o.policy, o.cpus, o.cpu0)
	}
	// The core is the cycle thread's alone.
	if orig.Count() < 2 {
		return
	}
	for _, tid := range threadIDs(t) {
		var set unix.CPUSet
		if tid == o.tid || unix.SchedGetaffinity(tid, &set) != nil {
			continue // the pinned thread, or one that ended meanwhile
		}
		if set.IsSet(0) {
			t.Errorf("thread %d may run on CPU 0, the pinned thread's", tid)
		}
	}
}

// TestCloseRestoresTheThread: Close gives a thread the policy, priority
// and CPUs it had before Apply, so that a thread the cycle unlocks goes
// back to the runtime as it came (Engine.Run); a second Close changes
// nothing. Root only, like TestApplyAsRoot.
func TestCloseRestoresTheThread(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SCHED_FIFO needs root (or CAP_SYS_NICE)")
	}
	procCPUs := restoreProcessCPUs(t)
	type sched struct {
		policy, prio uint32
		cpus         unix.CPUSet
	}
	read := func() (sched, error) {
		attr, err := unix.SchedGetAttr(0, 0)
		if err != nil {
			return sched{}, err
		}
		st := sched{policy: attr.Policy, prio: attr.Priority}
		return st, unix.SchedGetaffinity(0, &st.cpus)
	}
	errs := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // for good: the thread ends with the goroutine
		errs <- func() error {
			// A thread that is already real-time gets that back, not
			// the normal scheduler (the cycle process's other threads).
			if err := setFIFO(5); err != nil {
				return err
			}
			before, err := read()
			if err != nil {
				return err
			}
			core := 0
			for !procCPUs.IsSet(core) {
				core++
			}
			s := Apply(Options{Priority: 10, Core: core})
			if r := s.Refused(); len(r) != 0 {
				return fmt.Errorf("refused as root: %+v", r)
			}
			during, err := read()
			if err != nil {
				return err
			}
			if during.prio != 10 || during.cpus.Count() != 1 {
				return fmt.Errorf("after Apply: priority %d on %d CPUs, want 10 on 1", during.prio, during.cpus.Count())
			}
			for range 2 {
				if err := s.Close(); err != nil {
					return err
				}
				after, err := read()
				if err != nil {
					return err
				}
				if after != before {
					return fmt.Errorf("after Close: policy %d priority %d on %d CPUs, want policy %d priority %d on %d",
						after.policy, after.prio, after.cpus.Count(), before.policy, before.prio, before.cpus.Count())
				}
			}
			return nil
		}()
	}()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

func TestSleepUntilSpinReachesDeadline(t *testing.T) {
	for _, keepP := range []bool{false, true} {
		for _, spin := range []int64{0, 20_000, 200_000} {
			deadline := Now() + 500_000
			SleepUntilSpin(deadline, spin, keepP)
			if now := Now(); now < deadline {
				t.Errorf("spin %d, keepP %v: woke %d ns early", spin, keepP, deadline-now)
			}
		}
	}
}

// TestLockMemoryOnFault runs, in a child process (mlockall is for the
// whole process), the memory locking the cycle process does: the pages
// touched before it must be locked and no others. Then it maps 64 MiB:
// the mapping must not become resident at once (that would pin a whole
// 8 MiB thread stack for every thread the runtime creates later), and the
// pages it touches must be locked.
func TestLockMemoryOnFault(t *testing.T) {
	if os.Getenv("RT_LOCK_CHILD") == "1" {
		lockMemoryChild()
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("mlockall of a test process needs root (or CAP_IPC_LOCK and a large RLIMIT_MEMLOCK)")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockMemoryOnFault$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RT_LOCK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	t.Logf("child: %s", strings.TrimSpace(string(out)))
}

// lockMemoryChild is the child's side: it prints what it measured and
// exits non-zero when a check fails.
func lockMemoryChild() {
	fail := func(format string, args ...any) {
		fmt.Printf(format+"\n", args...)
		os.Exit(1)
	}
	// Touched before the locking: those pages must be locked, the rest of
	// the mapping neither locked nor made resident.
	early, err := unix.Mmap(-1, 0, 4<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fail("mmap: %v", err)
	}
	for i := range 8 {
		early[i*4096] = 1
	}
	// The status is read into a buffer made before the locking: anything
	// that grows the heap after it (reading smaps does) maps a new heap
	// chunk, which MCL_FUTURE|MCL_ONFAULT counts in VmLck at its full size
	// although only its touched pages are locked.
	status := make([]byte, 64<<10)
	s := Apply(Options{Core: -1, LockMemory: true})
	defer s.Close()
	lck, rss := statusKiBInto(status, "VmLck"), statusKiBInto(status, "VmRSS")
	r := s.Refused()
	switch {
	case pthreadStacks() && (len(r) != 1 || r[0].Err != error(cgoFutureError{})):
		fail("built with cgo: refused %+v, want mlock refused for later mappings only", r)
	case !pthreadStacks() && len(r) != 0:
		fail("refused: %+v", r)
	}
	// Only what is resident is locked, not the address space the runtime
	// reserved (VmLck was 1.25 GiB with mlockall MCL_CURRENT).
	if lck < 0 || rss < 0 || lck > rss+1<<10 {
		fail("VmLck %d KiB with VmRSS %d KiB: more than the resident pages locked", lck, rss)
	}
	if l := lockedKiB(uintptr(unsafe.Pointer(&early[0]))); l != 32 {
		fail("%d KiB locked of a mapping with 32 KiB touched before the locking", l)
	}
	// Threads the runtime starts later (it does under load, for
	// goroutines in system calls): with cgo each has a C stack of 8 MiB,
	// which must not count as locked.
	threadsBefore := statusKiBInto(status, "VmLck")
	ready := make(chan struct{})
	for range 4 {
		go func() {
			runtime.LockOSThread() // a thread of its own, never given back
			ready <- struct{}{}
			select {}
		}()
		<-ready
	}
	if grew := statusKiBInto(status, "VmLck") - threadsBefore; grew > 1<<10 {
		fail("4 new threads grew VmLck by %d KiB", grew)
	}
	const size = 64 << 20
	before := statusKiB("VmRSS")
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fail("mmap: %v", err)
	}
	mapped := statusKiB("VmRSS")
	const touched = 16
	for i := range touched {
		mem[i*4096] = 1
	}
	locked := lockedKiB(uintptr(unsafe.Pointer(&mem[0])))
	fmt.Printf("RSS %d KiB, after mapping 64 MiB %d KiB; %d pages touched, %d KiB of the mapping locked\n", before, mapped, touched, locked)
	if mapped-before > 8<<10 {
		fail("mapping 64 MiB made %d KiB resident: future mappings are locked in full, not on fault", mapped-before)
	}
	if pthreadStacks() {
		// Later mappings are not locked at all: VmLck stays what was
		// touched before, whatever the runtime's C threads map.
		if locked != 0 || statusKiB("VmLck") > lck {
			fail("built with cgo: %d KiB of a later mapping locked, VmLck %d KiB after %d", locked, statusKiB("VmLck"), lck)
		}
		return
	}
	if locked < touched*4 || locked > 8<<10 {
		fail("%d KiB of the mapping locked after touching %d pages", locked, touched)
	}
}

// statusKiB reads a "kB" field of /proc/self/status.
func statusKiB(field string) int {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return -1
}

// statusKiBInto reads a "kB" field of /proc/self/status into buf with
// raw system calls, allocating nothing (so it maps no new heap memory).
func statusKiBInto(buf []byte, field string) int {
	fd, err := unix.Open("/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	defer unix.Close(fd)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err != nil || m <= 0 {
			break
		}
		n += m
	}
	for line := range bytes.Lines(buf[:n]) {
		v, ok := bytes.CutPrefix(line, []byte(field+":"))
		if !ok {
			continue
		}
		kib := 0
		for _, c := range v {
			if c >= '0' && c <= '9' {
				kib = kib*10 + int(c-'0')
			}
		}
		return kib
	}
	return -1
}

// lockedKiB returns the "Locked:" size of the mapping that starts at addr
// in /proc/self/smaps.
func lockedKiB(addr uintptr) int {
	b, _ := os.ReadFile("/proc/self/smaps")
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if start, _, ok := strings.Cut(line, "-"); ok && !strings.Contains(start, " ") && !strings.Contains(start, ":") {
			v, err := strconv.ParseUint(start, 16, 64)
			in = err == nil && uintptr(v) == addr
			continue
		}
		if v, ok := strings.CutPrefix(line, "Locked:"); in && ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return -1
}

// TestLockMemoryUnderASmallLimit runs the memory locking in a child that
// sets its RLIMIT_MEMLOCK and then drops its privileges (no CAP_IPC_LOCK),
// as a container with the default limit runs. With a finite limit that
// covers what it has touched but not a heap arena more, locking later
// mappings makes the kernel refuse the runtime's next heap mapping, which
// ends a Go process; the child must instead be told that later memory is
// not locked, and grow its heap by 64 MiB and live. A soft limit below the
// hard one is raised first, so that what was touched is locked, and where
// the hard limit is unlimited later memory is locked too.
func TestLockMemoryUnderASmallLimit(t *testing.T) {
	if mode := os.Getenv("RT_LIMIT_CHILD"); mode != "" {
		limitedLockChild(mode)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to set the child's limits before it drops its privileges")
	}
	for _, mode := range []string{"finite", "soft-below-hard"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestLockMemoryUnderASmallLimit$", "-test.count=1")
			cmd.Env = append(os.Environ(), "RT_LIMIT_CHILD="+mode)
			out, err := cmd.CombinedOutput()
			if exitCode := cmd.ProcessState.ExitCode(); exitCode == childCannotSetUp {
				t.Skipf("child: %s", strings.TrimSpace(string(out)))
			}
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			t.Logf("child: %s", strings.TrimSpace(string(out)))
		})
	}
}

// childCannotSetUp is the exit code of a limitedLockChild that could not
// set up its case (the inherited hard limit is too low for it).
const childCannotSetUp = 3

// limitedLockChild is the child's side. As root it sets RLIMIT_MEMLOCK:
// for "finite" soft and hard 2 MiB above what it has resident; for
// "soft-below-hard" a soft limit of half that, under the hard limit it
// inherited. Then it becomes nobody, locks its memory as the cycle process
// does, checks what Apply said and what is locked, and grows its heap by
// 64 MiB.
func limitedLockChild(mode string) {
	fail := func(format string, args ...any) {
		fmt.Printf(format+"\n", args...)
		os.Exit(1)
	}
	status := make([]byte, 64<<10)
	rss := uint64(statusKiBInto(status, "VmRSS")) << 10
	var inherited unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &inherited); err != nil {
		fail("RLIMIT_MEMLOCK: %v", err)
	}
	lim := unix.Rlimit{Cur: rss + 2<<20, Max: rss + 2<<20}
	if mode == "soft-below-hard" {
		lim = unix.Rlimit{Cur: rss / 2, Max: inherited.Max}
	}
	if lim.Max > inherited.Max || lim.Max < rss+1<<20 {
		fmt.Printf("%s: the inherited hard RLIMIT_MEMLOCK %#x does not allow the case (%d KiB resident)\n", mode, inherited.Max, rss>>10)
		os.Exit(childCannotSetUp)
	}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		fail("set RLIMIT_MEMLOCK %+v: %v", lim, err)
	}
	// Every thread's, as the runtime does it: root's capabilities go.
	// (And the process becomes undumpable, which would close its own
	// /proc/self/pagemap to it; one started as nobody is dumpable.)
	if err := syscall.Setgid(65534); err != nil {
		fail("setgid: %v", err)
	}
	if err := syscall.Setuid(65534); err != nil {
		fail("setuid: %v", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		fail("PR_SET_DUMPABLE: %v", err)
	}
	if ipcLockCapable() {
		fail("CAP_IPC_LOCK still effective after setuid")
	}
	s := Apply(Options{Core: -1, LockMemory: true})
	defer s.Close()
	lck := statusKiBInto(status, "VmLck")
	refused := s.Refused()
	var now unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_MEMLOCK, &now)
	// The heap grows past the limit: the process must live (a refused
	// heap mapping ends it here).
	var keep [][]byte
	for range 64 {
		b := make([]byte, 1<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		keep = append(keep, b)
	}
	switch {
	case now.Cur != lim.Max:
		fail("soft RLIMIT_MEMLOCK %#x after Apply, want the hard limit %#x", now.Cur, lim.Max)
	case lim.Max == unix.RLIM_INFINITY && len(refused) != 0:
		fail("with an unlimited hard limit: refused %+v, want none", refused)
	case lim.Max != unix.RLIM_INFINITY && (len(refused) != 1 || !strings.Contains(refused[0].Err.Error(), "RLIMIT_MEMLOCK")):
		fail("under a finite limit without CAP_IPC_LOCK: refused %+v, want mlock refused naming RLIMIT_MEMLOCK", refused)
	case lck*1024 < int(rss)/2:
		fail("VmLck %d KiB with %d KiB resident before: the touched pages are not locked", lck, rss>>10)
	}
	fmt.Printf("%s: VmLck %d KiB after locking with %d KiB resident; soft limit now %#x; grew the heap by %d MiB, VmLck now %d KiB; refused: %v\n",
		mode, lck, rss>>10, now.Cur, len(keep), statusKiB("VmLck"), refused)
}

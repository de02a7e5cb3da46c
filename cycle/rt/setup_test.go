package rt

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
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

// TestApplyAsRoot sets every setting on a throwaway locked thread (the
// goroutine exits without unlocking, so the thread dies with it).
func TestApplyAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("SCHED_FIFO and mlockall need root (or CAP_SYS_NICE, CAP_IPC_LOCK)")
	}
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		if err := setThreadsAffinity(&orig); err != nil {
			t.Error(err)
		}
		runtime.GOMAXPROCS(procs)
	})
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
	if r := s.Refused(); len(r) != 0 {
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

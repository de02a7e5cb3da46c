package rt

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// lockResident locks the pages of this process that are in its page tables
// now (present in /proc/self/pagemap), and nothing else: the code, data
// and heap the process has touched, not the address space the Go runtime
// has reserved but never used (the page allocator's summaries, heap arenas
// beyond the heap) nor the pages of the binary it never ran (mlockall of
// the current mappings faults all of those in). It runs after bring-up,
// when what the cycle uses has been touched once.
func lockResident() error {
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return fmt.Errorf("lock resident pages: %w", err)
	}
	defer maps.Close()
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return fmt.Errorf("lock resident pages: %w", err)
	}
	defer pm.Close()
	page := uintptr(os.Getpagesize())
	var buf []byte
	var firstErr error
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		r, ok := lockableMapping(sc.Text())
		if !ok {
			continue
		}
		var err error
		if buf, err = lockPresentPages(pm, r, page, buf); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if err := sc.Err(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("lock resident pages: %w", err)
	}
	return firstErr
}

// mapping is an address range of the process, as /proc/self/maps names
// it (lo-hi, in hex).
type mapping struct {
	name       string
	start, end uintptr
}

// lockableMapping parses a line of /proc/self/maps. It is not ok for a
// mapping without access (---p, the runtime's reservations and guard
// pages), for the kernel's vsyscall and vvar pages, which cannot be
// locked, and for a line it cannot read.
func lockableMapping(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 2 || f[1] == "---p" || (len(f) >= 6 && (f[5] == "[vsyscall]" || f[5] == "[vvar]" || f[5] == "[vvar_vclock]")) {
		return mapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return mapping{}, false
	}
	return mapping{name: f[0], start: uintptr(start), end: uintptr(end)}, true
}

// lockPresentPages locks each run of r's pages that the page map pm says
// are present, and returns buf, grown if r's page map entries needed
// more, for the next mapping. A mapping whose page map cannot be read is
// skipped; the error is that of the first run mlock refused.
func lockPresentPages(pm *os.File, r mapping, page uintptr, buf []byte) ([]byte, error) {
	n := int((r.end - r.start) / page)
	if cap(buf) < 8*n {
		buf = make([]byte, 8*n)
	}
	b := buf[:8*n]
	if _, err := pm.ReadAt(b, int64(r.start/page*8)); err != nil {
		return buf, nil
	}
	var firstErr error
	run := -1
	for i := 0; i <= n; i++ {
		present := i < n && binary.NativeEndian.Uint64(b[8*i:])&(1<<63) != 0
		switch {
		case present && run < 0:
			run = i
		case !present && run >= 0:
			_, _, e := unix.Syscall(unix.SYS_MLOCK, r.start+uintptr(run)*page, uintptr(i-run)*page, 0)
			if e != 0 && firstErr == nil {
				firstErr = fmt.Errorf("mlock of %s: %w", r.name, e)
			}
			run = -1
		}
	}
	return buf, firstErr
}

// futureLockUnlimited returns nil when no RLIMIT_MEMLOCK applies to what
// the process maps from now on: CAP_IPC_LOCK is effective in the initial
// user namespace (where the kernel checks it), or the soft limit is, or
// can be raised to, unlimited. It raises the soft limit to the hard one in
// any case, so that as much as allowed of what was touched is locked.
// When a limit remains it says why memory mapped later is not locked.
func futureLockUnlimited() error {
	if ipcLockCapable() {
		return nil
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
		return fmt.Errorf("memory mapped later is not locked: RLIMIT_MEMLOCK: %w", err)
	}
	if lim.Cur < lim.Max { // RLIM_INFINITY is the largest value
		lim.Cur = lim.Max
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &lim); err != nil {
			return fmt.Errorf("memory mapped later is not locked: raising RLIMIT_MEMLOCK to its hard limit: %w", err)
		}
	}
	if lim.Cur == unix.RLIM_INFINITY {
		return nil
	}
	return fmt.Errorf("pages touched so far are locked, memory mapped later is not: RLIMIT_MEMLOCK is %d KiB without CAP_IPC_LOCK, and locking later mappings would make a heap growth past it end the process (give CAP_IPC_LOCK or an unlimited RLIMIT_MEMLOCK)", lim.Cur>>10)
}

// ipcLockCapable reports whether CAP_IPC_LOCK is in the process's
// effective set and counts: the kernel checks it against the initial user
// namespace, so a capability held only inside a user namespace (a rootless
// container) does not lift the limit.
func ipcLockCapable() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	if data[unix.CAP_IPC_LOCK/32].Effective&(1<<(unix.CAP_IPC_LOCK%32)) == 0 {
		return false
	}
	return inInitialUserNamespace()
}

// inInitialUserNamespace reports whether /proc/self/uid_map maps every
// user ID to itself, as only the initial user namespace does.
func inInitialUserNamespace() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// pthreadStacks reports whether the runtime starts its threads through
// the C library (a binary built with cgo, dynamically linked to it): each
// then gets a C stack of RLIMIT_STACK, 8 MiB by default, mapped in full.
// It looks for the C library among the process's mappings.
func pthreadStacks() bool {
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			continue
		}
		name := f[len(f)-1]
		if i := strings.LastIndexByte(name, '/'); i >= 0 {
			name = name[i+1:]
		}
		if strings.HasPrefix(name, "libc.so") || strings.HasPrefix(name, "libc-") || strings.HasPrefix(name, "ld-musl") {
			return true
		}
	}
	return false
}

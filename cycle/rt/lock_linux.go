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
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[1] == "---p" || (len(f) >= 6 && (f[5] == "[vsyscall]" || f[5] == "[vvar]" || f[5] == "[vvar_vclock]")) {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || end <= start {
			continue
		}
		n := int((uintptr(end) - uintptr(start)) / page)
		if cap(buf) < 8*n {
			buf = make([]byte, 8*n)
		}
		b := buf[:8*n]
		if _, err := pm.ReadAt(b, int64(uintptr(start)/page*8)); err != nil {
			continue
		}
		run := -1
		for i := 0; i <= n; i++ {
			present := i < n && binary.NativeEndian.Uint64(b[8*i:])&(1<<63) != 0
			switch {
			case present && run < 0:
				run = i
			case !present && run >= 0:
				_, _, e := unix.Syscall(unix.SYS_MLOCK, uintptr(start)+uintptr(run)*page, uintptr(i-run)*page, 0)
				if e != 0 && firstErr == nil {
					firstErr = fmt.Errorf("mlock of %s: %w", f[0], e)
				}
				run = -1
			}
		}
	}
	if err := sc.Err(); err != nil && firstErr == nil {
		firstErr = fmt.Errorf("lock resident pages: %w", err)
	}
	return firstErr
}

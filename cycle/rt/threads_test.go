package rt

import (
	"os"
	"testing"
)

// WarmThreads leaves the process with at least n threads besides the one
// that called it: n goroutines held one each at the same time, and the
// runtime keeps unlocked threads.
func TestWarmThreads(t *testing.T) {
	count := func() int {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skip("no /proc/self/task:", err)
		}
		return len(ents)
	}
	const n = 12
	WarmThreads(n)
	if got := count(); got < n+1 {
		t.Errorf("%d threads after WarmThreads(%d), want at least %d", got, n, n+1)
	}
}

//go:build !linux

package spsc

import (
	"sync/atomic"
	"time"
)

// sleep polls where there is no futex: good enough for development
// machines, which run no real-time cycle.
func sleep(word *atomic.Uint32, val uint32, timeout time.Duration) {
	end := time.Now().Add(timeout)
	for word.Load() == val && time.Now().Before(end) {
		time.Sleep(50 * time.Microsecond)
	}
}

func wake(*atomic.Uint32) {}

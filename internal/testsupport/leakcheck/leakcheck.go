// Package leakcheck fails a test that leaves goroutines running or file
// descriptors open. It is meant for tests that do not run in parallel with
// others (a parallel test's goroutines would count as its neighbours'
// leaks).
package leakcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Settle is how long the check waits for goroutines and descriptors to go
// away before it reports them.
const Settle = time.Second

// Check records the goroutines and the open file descriptors of the
// process, and returns a function that fails t, naming the goroutines
// (with their stacks) and the descriptors (with what they point to) that
// have appeared since and do not go away within Settle. The check also
// runs as a t.Cleanup registered now, so that it comes after the test's
// later cleanups; calling the returned function (e.g. with defer) runs it
// earlier instead. It runs once.
//
// Goroutines of the testing package and the runtime's own descriptors
// (the network poller's epoll and eventfd, created once per process) do
// not count.
func Check(t testing.TB) func() {
	t.Helper()
	goroutines := goroutineIDs(stacks())
	fds := openFDs()
	var once sync.Once
	check := func() {
		once.Do(func() {
			t.Helper()
			verify(t, goroutines, fds)
		})
	}
	t.Cleanup(check)
	return check
}

// verify polls until no new goroutine or descriptor is left, or Settle
// has passed, and reports what is left.
func verify(t testing.TB, goroutines map[int]bool, fds map[string]string) {
	t.Helper()
	deadline := time.Now().Add(Settle)
	for {
		leaked := newGoroutines(goroutines)
		extra := newFDs(fds)
		if len(leaked) == 0 && len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			if len(leaked) > 0 {
				fmt.Fprintf(&b, "%d goroutine(s) leaked:\n\n%s\n", len(leaked), strings.Join(leaked, "\n\n"))
			}
			if len(extra) > 0 {
				fmt.Fprintf(&b, "%d file descriptor(s) left open: %s\n", len(extra), strings.Join(extra, ", "))
			}
			t.Errorf("leakcheck: after %v:\n%s", Settle, b.String())
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stacks returns the stacks of all goroutines, one per element.
func stacks() []string {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Split(strings.TrimSpace(string(buf[:n])), "\n\n")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// goroutineID parses "goroutine 42 [running]:…"; -1 if it cannot.
func goroutineID(stack string) int {
	rest, ok := strings.CutPrefix(stack, "goroutine ")
	if !ok {
		return -1
	}
	id, _, _ := strings.Cut(rest, " ")
	n, err := strconv.Atoi(id)
	if err != nil {
		return -1
	}
	return n
}

func goroutineIDs(all []string) map[int]bool {
	ids := make(map[int]bool, len(all))
	for _, s := range all {
		ids[goroutineID(s)] = true
	}
	return ids
}

// currentID is the calling goroutine's id.
func currentID() int {
	buf := make([]byte, 64)
	return goroutineID(string(buf[:runtime.Stack(buf, false)]))
}

// newGoroutines returns the stacks of goroutines not in before, except the
// caller and the ones to ignore.
func newGoroutines(before map[int]bool) []string {
	self := currentID()
	var out []string
	for _, s := range stacks() {
		id := goroutineID(s)
		if before[id] || id == self || ignoredGoroutine(s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// ignoredGoroutine reports goroutines that are the test framework's, not
// the code under test's.
func ignoredGoroutine(stack string) bool {
	for _, marker := range []string{
		"\ncreated by testing.", // test runners of other (sub)tests
		"\ntesting.tRunner(",
		"\ntesting.(*M).",
		"os/signal.signal_recv",
		"runtime.ensureSigM",
	} {
		if strings.Contains(stack, marker) {
			return true
		}
	}
	return false
}

// openFDs maps each open descriptor number to what it points to.
func openFDs() map[string]string {
	const dir = "/proc/self/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // no procfs: descriptors are not checked
	}
	fds := make(map[string]string, len(entries))
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // the one ReadDir itself used, closed by now
		}
		fds[e.Name()] = target
	}
	return fds
}

// newFDs lists descriptors open now that were not (or pointed elsewhere)
// in before, as "fd -> target", sorted by number.
func newFDs(before map[string]string) []string {
	if before == nil {
		return nil
	}
	var out []string
	for fd, target := range openFDs() {
		if old, ok := before[fd]; ok && old == target {
			continue
		}
		if target == "anon_inode:[eventpoll]" || target == "anon_inode:[eventfd]" {
			continue // the network poller's, kept for the life of the process
		}
		out = append(out, fd+" -> "+target)
	}
	slices.SortFunc(out, compareFD)
	return out
}

// compareFD orders "fd -> target" strings by descriptor number.
func compareFD(a, b string) int {
	na, _ := strconv.Atoi(a[:strings.IndexByte(a, ' ')])
	nb, _ := strconv.Atoi(b[:strings.IndexByte(b, ' ')])
	return na - nb
}

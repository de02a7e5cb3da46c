package shm

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// smallLayout is a layout small enough to fill in tests.
func smallLayout() Layout {
	return Layout{SampleSlots: 8, ImageBytes: 100, CommandSlots: 4, EventSlots: 2, Period: 1_000_000}
}

// newMemfdSegment creates a memfd segment closed when the test ends.
func newMemfdSegment(tb testing.TB, l Layout) *Segment {
	tb.Helper()
	s, err := CreateMemfd("ecagent-test", l)
	if errors.Is(err, errors.ErrUnsupported) {
		tb.Skipf("CreateMemfd: %v", err)
	}
	if err != nil {
		tb.Fatalf("CreateMemfd: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// newHeapSegment creates a segment in Go memory, where the race detector
// sees every access.
func newHeapSegment(tb testing.TB, l Layout) *Segment {
	tb.Helper()
	s, err := New(l)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	return s
}

// segmentDir returns a directory for segment files: a fresh one under
// /dev/shm where it exists (as in production), else a test temp dir.
func segmentDir(tb testing.TB) string {
	tb.Helper()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		dir, err := os.MkdirTemp("/dev/shm", "ecagent-shm-test-")
		if err == nil {
			tb.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return tb.TempDir()
}

// newFileSegment creates a segment file in segmentDir and returns it and
// its path; it is closed when the test ends.
func newFileSegment(tb testing.TB, l Layout) (*Segment, string) {
	tb.Helper()
	path := filepath.Join(segmentDir(tb), "seg")
	s, err := Create(path, l)
	if errors.Is(err, errors.ErrUnsupported) {
		tb.Skipf("Create: %v", err)
	}
	if err != nil {
		tb.Fatalf("Create: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s, path
}

// kinds of segment every ring and image test runs on.
var segmentKinds = []struct {
	name string
	make func(testing.TB, Layout) *Segment
}{
	{"heap", newHeapSegment},
	{"memfd", newMemfdSegment},
	{"file", func(tb testing.TB, l Layout) *Segment { s, _ := newFileSegment(tb, l); return s }},
}

// raceReads runs write in a goroutine and calls read over and over while
// it runs, with the number of reads so far; read returns what is wrong
// with what it read, or "" when nothing is. t fails with the first wrong
// read. The writer has returned when raceReads does (a segment it writes
// may be unmapped then).
func raceReads(t *testing.T, write func(), read func(reads int) string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		write()
	}()
	var bad string
	for running, reads := true, 0; running; reads++ {
		select {
		case <-done:
			running = false
		default:
		}
		if bad == "" {
			bad = read(reads)
		}
	}
	if bad != "" {
		t.Error(bad)
	}
}

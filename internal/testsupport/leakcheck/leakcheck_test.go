package leakcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Check reports and runs its
// cleanups on demand.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// finish runs the cleanups, last first, as testing does.
func (r *recorder) finish() string {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return strings.Join(r.errors, "\n")
}

// parkedLeak is a function name to look for in a leaked goroutine's stack.
func parkedLeak(stop chan struct{}) { <-stop }

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		// act runs between Check and the end; it returns what to do after
		// the check (undo the leak so the next case starts clean).
		act  func(t *testing.T) (undo func())
		want []string // substrings of the report; none: no report
	}{
		{"nothing leaks", func(*testing.T) func() { return func() {} }, nil},
		{"a goroutine that ends within the settle time", func(*testing.T) func() {
			go time.Sleep(200 * time.Millisecond)
			return func() {}
		}, nil},
		{"a goroutine that stays", func(*testing.T) func() {
			stop := make(chan struct{})
			go parkedLeak(stop)
			return func() { close(stop) }
		}, []string{"1 goroutine(s) leaked", "leakcheck.parkedLeak", "leakcheck_test.go"}},
		{"a file left open", func(t *testing.T) func() {
			path := filepath.Join(t.TempDir(), "left-open")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			return func() { f.Close() }
		}, []string{"1 file descriptor(s) left open", "left-open"}},
		{"a file closed before the end", func(t *testing.T) func() {
			f, err := os.Create(filepath.Join(t.TempDir(), "closed"))
			if err != nil {
				t.Fatal(err)
			}
			f.Close()
			return func() {}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r)
			undo := tt.act(t)
			report := r.finish()
			undo()
			if len(tt.want) == 0 && report != "" {
				t.Fatalf("unexpected report:\n%s", report)
			}
			for _, w := range tt.want {
				if !strings.Contains(report, w) {
					t.Errorf("report lacks %q:\n%s", w, report)
				}
			}
		})
	}
}

// TestCheckRunsOnce: the returned function and the cleanup share one
// check, so a deferred call does not report twice.
func TestCheckRunsOnce(t *testing.T) {
	r := &recorder{TB: t}
	done := Check(r)
	stop := make(chan struct{})
	go parkedLeak(stop)
	done()
	report := r.finish()
	close(stop)
	if n := strings.Count(report, "goroutine(s) leaked"); n != 1 {
		t.Fatalf("reported %d times:\n%s", n, report)
	}
}

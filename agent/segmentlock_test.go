package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSegmentLockOneAgent checks that the segment's lock admits one
// agent: a second taker gets a *SegmentInUseError naming the holder's
// pid (this process, from /proc/locks), and takes it once the first lets
// go, which removes the file; a symbolic link at the lock's name is refused, not followed.
func TestSegmentLockOneAgent(t *testing.T) {
	dir := t.TempDir()
	seg := filepath.Join(dir, "ecagent.shm")
	first, err := lockSegment(seg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = lockSegment(seg)
	var inUse *SegmentInUseError
	if !errors.As(err, &inUse) {
		t.Fatalf("second lock: %v, want a SegmentInUseError", err)
	}
	if inUse.PID != os.Getpid() || !strings.Contains(err.Error(), "pid ") || !strings.Contains(err.Error(), seg) {
		t.Errorf("second lock: %v (pid %d), want the holder %d and the segment named", err, inUse.PID, os.Getpid())
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(seg + ".agent.lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left after Close: %v", err)
	}
	again, err := lockSegment(seg)
	if err != nil {
		t.Fatalf("lock after the first let go: %v", err)
	}
	_ = again.Close()

	linked := filepath.Join(dir, "linked.shm")
	target := filepath.Join(dir, "elsewhere")
	if err := os.Symlink(target, linked+".agent.lock"); err != nil {
		t.Fatal(err)
	}
	if f, err := lockSegment(linked); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		if f != nil {
			_ = f.Close()
		}
		t.Errorf("lock through a symbolic link: %v, want it refused", err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the link's target was created: %v", err)
	}
}

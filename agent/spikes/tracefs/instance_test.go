package tracefs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openForTest opens an instance of its own name on CPU 0, skipping the
// test when tracefs is not there or not permitted.
func openForTest(t *testing.T, events ...string) *Instance {
	t.Helper()
	if _, err := os.Stat(filepath.Join(DefaultRoot, "instances")); err != nil {
		t.Skipf("no tracefs at %s: %v", DefaultRoot, err)
	}
	in, err := Open(Config{Name: "ecagent-test-" + t.Name(), CPU: 0, BufferKB: 64, Events: events})
	if errors.Is(err, fs.ErrPermission) {
		t.Skipf("tracefs not permitted: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// TestInstanceReadsSchedSwitches records CPU 0's scheduler events, reads
// them back in binary and checks every record is a known event with
// increasing, CLOCK_MONOTONIC time stamps; on Close the instance is gone.
func TestInstanceReadsSchedSwitches(t *testing.T) {
	in := openForTest(t, "sched/sched_switch", "sched/sched_wakeup", "nosuch/event")
	dir := in.Dir()
	if got := in.Missing(); len(got) != 1 || got[0] != "nosuch/event" {
		t.Errorf("Missing = %v, want [nosuch/event]", got)
	}
	ids := map[uint16]string{}
	for _, f := range in.Formats() {
		ids[f.ID] = f.Name
	}
	start := monoNow()
	deadline := time.Now().Add(5 * time.Second)
	var n int
	var last uint64
	for n < 50 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // make switches on CPU 0, and let the ring fill
		_, err := in.Read(func(ts uint64, rec []byte) {
			typ := uint16(rec[0]) | uint16(rec[1])<<8
			if _, ok := ids[typ]; !ok {
				t.Fatalf("record of type %d, not an enabled event", typ)
			}
			if ts < last {
				t.Fatalf("time stamp %d before the previous %d", ts, last)
			}
			last = ts
			n++
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 50 {
		t.Fatalf("%d records in 5 s", n)
	}
	if now := monoNow(); last < start || last > now {
		t.Errorf("last time stamp %d outside [%d, %d]: not CLOCK_MONOTONIC", last, start, now)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("instance %s still there after Close: %v", dir, err)
	}
}

// TestInstanceFeedsNoTaskNames checks that the instance does not feed the
// kernel's task-name cache (saved_cmdlines): a thread of a name of its
// own switching on the recorded CPU while the instance records sched
// events is not in the cache afterwards, and the top level's record-cmd
// option is as it was found, during recording and after Close.
func TestInstanceFeedsNoTaskNames(t *testing.T) {
	opt := filepath.Join(DefaultRoot, "options", "record-cmd")
	before, err := os.ReadFile(opt)
	if err != nil {
		t.Skipf("no %s: %v", opt, err)
	}
	if b, err := os.ReadFile(filepath.Join(DefaultRoot, "events", "enable")); err != nil || strings.TrimSpace(string(b)) != "0" {
		t.Skipf("the top-level trace records events (%q, %v): it feeds the cache itself", b, err)
	}
	in := openForTest(t, "sched/sched_switch", "sched/sched_wakeup")
	if got, _ := os.ReadFile(opt); string(got) != string(before) {
		t.Errorf("record-cmd %q while recording, was %q", got, before)
	}
	name := fmt.Sprintf("ecnocmd%d", os.Getpid()%100000)
	tid := make(chan int)
	go func() { // a thread of its own name on CPU 0 that sleeps and wakes
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var cpu0 unix.CPUSet
		cpu0.Set(0)
		_ = unix.SchedSetaffinity(0, &cpu0)
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&append([]byte(name), 0)[0])), 0, 0, 0)
		for range 50 {
			time.Sleep(time.Millisecond)
		}
		tid <- unix.Gettid()
	}()
	id := <-tid
	var records int
	if _, err := in.Read(func(uint64, []byte) { records++ }, nil); err != nil {
		t.Fatal(err)
	}
	if records == 0 {
		t.Fatal("no sched event recorded on CPU 0: the check would prove nothing")
	}
	cache, err := os.ReadFile(filepath.Join(DefaultRoot, "saved_cmdlines"))
	if err != nil {
		t.Fatal(err)
	}
	if entry := fmt.Sprintf("%d %s", id, name); strings.Contains(string(cache), entry) {
		t.Errorf("saved_cmdlines has %q: the instance feeds the task-name cache", entry)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(opt); string(got) != string(before) {
		t.Errorf("record-cmd %q after Close, was %q", got, before)
	}
}

// TestMkdirLeavesTheOptionWhenNotLocked checks, on a directory standing
// in for tracefs, that the top-level record-cmd option is cleared and set
// back around the mkdir only under the root's lock: with the lock held
// elsewhere the instance is still made (after lockWait) and the option is
// never written; without it, it is written and ends as it was.
func TestMkdirLeavesTheOptionWhenNotLocked(t *testing.T) {
	root := t.TempDir()
	opt := filepath.Join(root, "options", "record-cmd")
	if err := os.MkdirAll(filepath.Join(root, "instances"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(opt), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(opt, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(opt, old, old); err != nil {
		t.Fatal(err)
	}
	modified := func() bool {
		fi, err := os.Stat(opt)
		if err != nil {
			t.Fatal(err)
		}
		return !fi.ModTime().Equal(old)
	}

	holder, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(holder, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if err := mkdirWithoutComms(root, filepath.Join(root, "instances", "a")); err != nil {
		t.Fatalf("mkdir with the lock held elsewhere: %v", err)
	}
	if modified() {
		t.Error("record-cmd written without the lock")
	}
	_ = unix.Close(holder) // lets the lock go

	if err := mkdirWithoutComms(root, filepath.Join(root, "instances", "b")); err != nil {
		t.Fatal(err)
	}
	if !modified() {
		t.Error("record-cmd not cleared around the mkdir under the lock")
	}
	if b, _ := os.ReadFile(opt); strings.TrimSpace(string(b)) != "1" {
		t.Errorf("record-cmd %q after the mkdir, want it set back to 1", b)
	}
}

//go:build linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestAttachRefuses checks every way Attach refuses a file: each error is
// typed, matches ErrIncompatible and says what is wrong.
func TestAttachRefuses(t *testing.T) {
	var h header
	total := func() int64 { p, _ := planFor(smallLayout()); return int64(p.total) }()
	le32 := func(v uint32) []byte { return binary.NativeEndian.AppendUint32(nil, v) }
	le64 := func(v uint64) []byte { return binary.NativeEndian.AppendUint64(nil, v) }

	tests := []struct {
		name string
		// prepare turns the segment file at path into the case's file.
		prepare func(t *testing.T, path string)
		check   func(t *testing.T, err error)
		words   []string // the message contains each
	}{
		{
			name:    "foreign file",
			prepare: func(t *testing.T, path string) { writeFile(t, path, []byte(strings.Repeat("not a segment ", 400))) },
			check:   wantErr[*ForeignError](func(e *ForeignError) bool { return string(e.Magic[:]) == "not a se" }),
			words:   []string{"not an ecagent segment", `"not a se"`},
		},
		{
			name:    "short foreign file",
			prepare: func(t *testing.T, path string) { writeFile(t, path, []byte("{}")) },
			check:   wantErr[*ForeignError](func(e *ForeignError) bool { return e.Magic == [8]byte{'{', '}'} }),
			words:   []string{"not an ecagent segment"},
		},
		{
			name:    "empty file",
			prepare: func(t *testing.T, path string) { writeFile(t, path, nil) },
			check:   wantErr[*SizeError](func(e *SizeError) bool { return e.Truncated() && e.FileSize == 0 && e.Want == headerSize }),
			words:   []string{"truncated", "0 bytes, want 512"},
		},
		{
			name:    "file shorter than its header",
			prepare: func(t *testing.T, path string) { truncate(t, path, 100) },
			check:   wantErr[*SizeError](func(e *SizeError) bool { return e.Truncated() && e.FileSize == 100 }),
			words:   []string{"truncated"},
		},
		{
			name: "wrong version",
			prepare: func(t *testing.T, path string) {
				patch(t, path, unsafe.Offsetof(h.Version), le32(LayoutVersion+6))
			},
			check: wantErr[*VersionError](func(e *VersionError) bool {
				return e.Segment == LayoutVersion+6 && e.Reader == LayoutVersion
			}),
			words: []string{fmt.Sprintf("layout version %d", LayoutVersion+6), fmt.Sprintf("reads version %d", LayoutVersion), "another ecagent version"},
		},
		{
			name:    "truncated",
			prepare: func(t *testing.T, path string) { truncate(t, path, total-sizeAlign/2) },
			check: wantErr[*SizeError](func(e *SizeError) bool {
				return e.Truncated() && e.FileSize == total-sizeAlign/2 && e.Want == total
			}),
			words: []string{"truncated", fmt.Sprintf("want %d", total)},
		},
		{
			name:    "too long",
			prepare: func(t *testing.T, path string) { truncate(t, path, total+sizeAlign) },
			check: wantErr[*SizeError](func(e *SizeError) bool {
				return !e.Truncated() && e.FileSize == total+sizeAlign && e.Want == total
			}),
			words: []string{"wrong size"},
		},
		{
			name:    "moved region",
			prepare: func(t *testing.T, path string) { patch(t, path, unsafe.Offsetof(h.Events), le64(4096)) },
			check: wantErr[*LayoutError](func(e *LayoutError) bool {
				return e.Field == "events offset" && e.Got == 4096 && e.Err == nil
			}),
			words: []string{"events offset is 4096"},
		},
		{
			name: "wrong record size",
			prepare: func(t *testing.T, path string) {
				patch(t, path, unsafe.Offsetof(h.Samples)+unsafe.Offsetof(h.Samples.RecordSize), le32(48))
			},
			check: wantErr[*LayoutError](func(e *LayoutError) bool {
				return e.Field == "samples record size" && e.Got == 48 && e.Want == SampleSize
			}),
			words: []string{"samples record size is 48, want 64"},
		},
		{
			name: "capacity not a power of two",
			prepare: func(t *testing.T, path string) {
				patch(t, path, unsafe.Offsetof(h.Commands)+unsafe.Offsetof(h.Commands.Capacity), le32(3))
			},
			check: wantErr[*LayoutError](func(e *LayoutError) bool { return errors.Is(e, ErrInvalidLayout) }),
			words: []string{"CommandSlots is 3"},
		},
		{
			name:    "wrong header size",
			prepare: func(t *testing.T, path string) { patch(t, path, unsafe.Offsetof(h.HeaderSize), le32(1024)) },
			check:   wantErr[*LayoutError](func(e *LayoutError) bool { return e.Field == "header size" }),
			words:   []string{"header size is 1024, want 512"},
		},
		{
			name: "created before the last boot",
			prepare: func(t *testing.T, path string) {
				if hostBootID() == ([16]byte{}) {
					t.Skip("no /proc/sys/kernel/random/boot_id")
				}
				id := hostBootID()
				id[0] ^= 0xff
				patch(t, path, unsafe.Offsetof(h.BootID), id[:])
			},
			check: wantErr[*StaleError](func(e *StaleError) bool {
				return e.HostBootID == hostBootID() && e.SegmentBootID != e.HostBootID
			}),
			words: []string{"stale", "boot id"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seg")
			s, err := Create(path, smallLayout())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			tt.prepare(t, path)
			got, err := Attach(path)
			if err == nil {
				got.Close()
				t.Fatalf("Attach succeeded, want an error")
			}
			if !errors.Is(err, ErrIncompatible) {
				t.Errorf("Attach error %v does not match ErrIncompatible", err)
			}
			tt.check(t, err)
			for _, w := range append(tt.words, path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Attach error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// wantErr returns a check that err is a *E satisfying ok.
func wantErr[E error](ok func(E) bool) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var e E
		if !errors.As(err, &e) {
			t.Fatalf("Attach error %v (%T), want %T", err, err, e)
		}
		if !ok(e) {
			t.Errorf("Attach error %+v has the wrong details", e)
		}
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncate(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
}

// patch overwrites the file at path with b from offset off.
func patch(t *testing.T, path string, off uintptr, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, int64(off)); err != nil {
		t.Fatal(err)
	}
}

func TestAttachMissingFile(t *testing.T) {
	_, err := Attach(filepath.Join(t.TempDir(), "nothing"))
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrIncompatible) {
		t.Fatalf("Attach(missing) = %v, want fs.ErrNotExist and not ErrIncompatible", err)
	}
}

func TestCreateRefusesExistingPath(t *testing.T) {
	s, path := newFileSegment(t, smallLayout())
	s.Samples().Push(&Sample{Cycle: 42})
	_, err := Create(path, smallLayout())
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("Create over an existing segment = %v, want fs.ErrExist", err)
	}
	// The existing segment is untouched and no temporary file is left.
	other, err := Attach(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if other.Info().Nonce != s.Info().Nonce || other.Samples().Pushed() != 1 {
		t.Errorf("segment at %s was replaced", path)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the segment: %v", len(entries), entries)
	}
}

func TestCreateInvalidLayout(t *testing.T) {
	dir := t.TempDir()
	l := smallLayout()
	l.SampleSlots = 3
	if _, err := Create(filepath.Join(dir, "seg"), l); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("Create = %v, want ErrInvalidLayout", err)
	}
	if _, err := CreateMemfd("seg", l); !errors.Is(err, ErrInvalidLayout) {
		t.Errorf("CreateMemfd = %v, want ErrInvalidLayout", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("Create left %v behind", entries)
	}
}

func TestCreateFilePermissionsAndSize(t *testing.T) {
	s, path := newFileSegment(t, smallLayout())
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("segment mode %v, want 0600", st.Mode().Perm())
	}
	if st.Size() != s.Info().Size {
		t.Errorf("file size %d, header says %d", st.Size(), s.Info().Size)
	}
	if s.File() == nil {
		t.Errorf("File() = nil for a file segment")
	}
}

// TestMemfd attaches to a memfd through /proc/self/fd, as a restarted
// agent could through /proc/<cycle pid>/fd, and checks the seals.
func TestMemfd(t *testing.T) {
	s := newMemfdSegment(t, smallLayout())
	if !strings.HasPrefix(s.Info().Name, "memfd:") {
		t.Errorf("memfd segment named %q", s.Info().Name)
	}
	s.Samples().Push(&Sample{Cycle: 5})
	other, err := Attach(fmt.Sprintf("/proc/self/fd/%d", s.File().Fd()))
	if err != nil {
		t.Fatalf("Attach through /proc/self/fd: %v", err)
	}
	defer other.Close()
	var got Sample
	if !other.Samples().Next(&got) || got.Cycle != 5 {
		t.Errorf("attached sample %+v, want cycle 5", got)
	}
	if err := s.File().Truncate(0); !errors.Is(err, unix.EPERM) {
		t.Errorf("truncating a sealed memfd = %v, want EPERM", err)
	}
}

func TestLock(t *testing.T) {
	s := newMemfdSegment(t, smallLayout())
	if err := s.Lock(); err != nil {
		// Refusal is allowed (no CAP_IPC_LOCK, small RLIMIT_MEMLOCK) but
		// must say what was refused.
		if !strings.Contains(err.Error(), "lock memfd:") {
			t.Errorf("Lock error %q does not name the segment", err)
		}
		t.Logf("Lock refused: %v", err)
	}
	if err := newHeapSegment(t, smallLayout()).Lock(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Lock on a heap segment = %v, want ErrUnsupported", err)
	}
}

func TestCloseTwice(t *testing.T) {
	s, err := CreateMemfd("twice", smallLayout())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if s.File() != nil {
		t.Errorf("File() after Close = %v, want nil", s.File())
	}
}

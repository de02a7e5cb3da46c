package contract

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBusInfoWriteRefusesPlantedFiles plants the bus description's name
// as another user's file and as a symbolic link, as a local user could in
// /dev/shm: the cycle refuses to replace either, and leaves them be.
func TestBusInfoWriteRefusesPlantedFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting another user's file needs root")
	}
	dir := t.TempDir()
	path := BusInfoPath(filepath.Join(dir, "x.shm"))
	if err := os.WriteFile(path, []byte("theirs"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	bi := &BusInfo{CyclePID: os.Getpid()}
	if err := WriteBusInfo(path, bi); err == nil || !strings.Contains(err.Error(), "belongs to user 65534") {
		t.Errorf("over another user's file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "theirs" {
		t.Errorf("another user's file now holds %q", b)
	}
	if _, err := ReadBusInfo(path); err == nil || !strings.Contains(err.Error(), "belongs to user 65534") {
		t.Errorf("read another user's file: %v", err)
	}

	link := BusInfoPath(filepath.Join(dir, "y.shm"))
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteBusInfo(link, bi); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("over a symbolic link: %v", err)
	}
	if _, err := ReadBusInfo(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("read through a symbolic link: %v", err)
	}

	own := BusInfoPath(filepath.Join(dir, "z.shm"))
	if err := WriteBusInfo(own, bi); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBusInfo(own)
	if err != nil || got.CyclePID != bi.CyclePID {
		t.Errorf("read back: %+v, %v", got, err)
	}
	if fi, _ := os.Stat(own); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestSideFiles: the files the agent removes with a segment lie beside
// it, and none of them is the segment.
func TestSideFiles(t *testing.T) {
	const shm = "/dev/shm/x.shm"
	files := SideFiles(shm)
	if len(files) != 3 || files[0] != BusInfoPath(shm) {
		t.Fatalf("SideFiles = %v", files)
	}
	for _, f := range files {
		if f == shm || !strings.HasPrefix(f, shm+".") {
			t.Errorf("%s is not beside %s", f, shm)
		}
	}
	if err := CheckOwnFile(filepath.Join(t.TempDir(), "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

// TestSocketPair: the pair keeps frame boundaries, as the links on both
// ends need.
func TestSocketPair(t *testing.T) {
	a, b, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	defer b.Close()
	for _, frame := range []string{"first", "second frame"} {
		if _, err := a.Write([]byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 64)
	for _, want := range []string{"first", "second frame"} {
		n, err := b.Read(buf)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("read %q, %v; want %q", buf[:n], err, want)
		}
	}
}

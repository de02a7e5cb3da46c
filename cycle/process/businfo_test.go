package process

import (
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
	if err := bi.write(path); err == nil || !strings.Contains(err.Error(), "belongs to user 65534") {
		t.Errorf("over another user's file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "theirs" {
		t.Errorf("another user's file now holds %q", b)
	}

	link := BusInfoPath(filepath.Join(dir, "y.shm"))
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if err := bi.write(link); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("over a symbolic link: %v", err)
	}

	own := BusInfoPath(filepath.Join(dir, "z.shm"))
	if err := bi.write(own); err != nil {
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

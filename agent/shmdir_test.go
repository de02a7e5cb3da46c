package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMakeDefaultSHMDir creates the default segment's directory when it is
// missing, with mode 0750, and no other directory.
func TestMakeDefaultSHMDir(t *testing.T) {
	base := t.TempDir()
	def := filepath.Join(base, "ecagent")
	other := filepath.Join(base, "other")
	if err := makeDefaultSHMDir(other, def); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("another directory than the default's was created: %v", err)
	}
	if err := makeDefaultSHMDir(def, def); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(def)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o750 {
		t.Fatalf("default directory: %v %v", fi, err)
	}
	if err := makeDefaultSHMDir(def, def); err != nil {
		t.Errorf("an existing default directory: %v", err)
	}
}

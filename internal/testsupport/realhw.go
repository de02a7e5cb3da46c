package testsupport

import (
	"os"
	"path/filepath"
	"testing"
)

// ModuleRoot returns the folder of the module's go.mod, found from the
// test's working folder (its package's folder) upwards.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// RealHW returns the path of elem under testdata/real-hw, the data read
// from real devices (SII images, captures) that this project did not
// write: the ground truth for the codecs and the simulator.
func RealHW(tb testing.TB, elem ...string) string {
	tb.Helper()
	return filepath.Join(append([]string{ModuleRoot(tb), "testdata", "real-hw"}, elem...)...)
}

// RealImage returns the SII image read from a real device, by its base
// name in testdata/real-hw/sii ("el2004" or "el2004.bin").
func RealImage(tb testing.TB, name string) []byte {
	tb.Helper()
	if filepath.Ext(name) == "" {
		name += ".bin"
	}
	b, err := os.ReadFile(RealHW(tb, "sii", name))
	if err != nil {
		tb.Fatalf("real SII image: %v", err)
	}
	return b
}

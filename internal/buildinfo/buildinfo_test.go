package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

func TestLineNamesProgramVersionAndPlatform(t *testing.T) {
	v, rev, _ := Read()
	if v == "" || rev == "" {
		t.Fatalf("Read() = %q, %q", v, rev)
	}
	line := Line("ecagent-cycle")
	for _, want := range []string{"ecagent-cycle ", v, rev, runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH} {
		if !strings.Contains(line, want) {
			t.Errorf("Line() = %q, want it to contain %q", line, want)
		}
	}
}

package rt

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestDisableTHP(t *testing.T) {
	// The setting is the process's; the test process can keep it.
	if err := DisableTHP(); err != nil {
		t.Fatal(err)
	}
	v, err := unix.PrctlRetInt(unix.PR_GET_THP_DISABLE, 0, 0, 0, 0)
	if err != nil || v != 1 {
		t.Errorf("PR_GET_THP_DISABLE = %d, %v; want 1", v, err)
	}
}

package test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the ecagent binary the tests built, with its directory.
// With ECAGENT_TEST_SQUATTER set the binary is no test but the squatter of
// TestSquattedMaintenanceSocket, run as another user (squatterMain); with
// ECAGENT_TEST_SPIKE_HOG, _FLOOD or _COMPACT set, an injector of the spike
// tests (hogMain, floodMain, compactMain).
func TestMain(m *testing.M) {
	if spec := os.Getenv(compactEnv); spec != "" {
		os.Exit(compactMain(spec))
	}
	if spec := os.Getenv(floodEnv); spec != "" {
		os.Exit(floodMain(spec))
	}
	if spec := os.Getenv(hogEnv); spec != "" {
		os.Exit(hogMain(spec))
	}
	if path := os.Getenv(squatterEnv); path != "" {
		os.Exit(squatterMain(path))
	}
	code := m.Run()
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

package test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// TestMain removes the ecagent binary the tests built, with its directory,
// and fails the run when a cycle process the tests started outlives them
// (cyclereap.Check).
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
	cyclereap.Mark()
	code := m.Run()
	// A cycle process one of the tests started and did not reap fails the
	// run, and is killed (a cycle once ran on for 1 h 43 min).
	code = cyclereap.Check(os.Stderr, code, 10*time.Second)
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

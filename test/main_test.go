package test

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the ecagent binary the tests built, with its directory.
func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		_ = os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

package main

import (
	"context"
	"os"
	"testing"
)

// TestMain lets the test binary stand in for ecagent when a command under
// test starts child processes of itself (run and bench start `ecagent
// cycle` and `ecagent sim` through os.Executable): with ECAGENT_TEST_MAIN=1
// in its environment the binary runs the command line instead of tests.
func TestMain(m *testing.M) {
	if os.Getenv("ECAGENT_TEST_MAIN") == "1" {
		os.Exit(dispatch(context.Background(), &env{stdout: os.Stdout, stderr: os.Stderr, environ: os.Environ()}, os.Args[1:]))
	}
	os.Exit(m.Run())
}

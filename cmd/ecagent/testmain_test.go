package main

import (
	"os"
	"testing"
)

// TestMain lets the test binary stand in for ecagent when a command under
// test starts child processes of itself (run and bench start `ecagent
// cycle` and `ecagent sim` through os.Executable): with ECAGENT_TEST_MAIN=1
// in its environment the binary runs the command line instead of tests,
// as main does (signals included).
func TestMain(m *testing.M) {
	if os.Getenv("ECAGENT_TEST_MAIN") == "1" {
		os.Exit(mainCode(os.Args[1:]))
	}
	os.Exit(m.Run())
}

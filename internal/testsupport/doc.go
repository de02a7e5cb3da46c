// Package testsupport holds the helpers the project's tests share: a
// buffer safe for concurrent logging, the -update flag and golden-file
// comparison, a systemd notify socket, paths into the real-hardware data
// of testdata/real-hw, waiting with a deadline, free loopback ports and a
// child process's output line by line.
//
// It is for tests only: it imports the standard library alone, and no
// package outside tests may import it or anything below it (the layering
// test in test/layering_test.go fails when one does). Helpers that need
// project packages live in its sub-packages (simbus, capture, leakcheck).
package testsupport

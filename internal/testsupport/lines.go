package testsupport

import (
	"bufio"
	"os/exec"
	"testing"
)

// StartLines starts cmd with its standard output read line by line into
// the returned channel, closed once the output ends; it fails tb when cmd
// does not start. Stopping cmd is the caller's: a helper process is told
// to stop in its own way.
func StartLines(tb testing.TB, cmd *exec.Cmd) <-chan string {
	tb.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		in := bufio.NewScanner(out)
		for in.Scan() {
			lines <- in.Text()
		}
	}()
	return lines
}

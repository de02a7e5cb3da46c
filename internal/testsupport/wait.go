package testsupport

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// The pause between two questions of WaitFor starts short, for what is
// quick, and doubles up to a ceiling, for what is costly to ask (a
// Prometheus query).
const (
	firstPause = 10 * time.Millisecond
	maxPause   = 500 * time.Millisecond
)

// WaitFor asks done until it reports true and fails the test, naming what
// it waited for, when that has not happened within the deadline. For
// conditions that no event announces (a file appears, a scrape shows a
// value); prefer a channel where the code under test offers one.
func WaitFor(tb testing.TB, within time.Duration, what string, done func() bool) {
	tb.Helper()
	if !Eventually(within, done) {
		tb.Fatalf("no %s within %v", what, within)
	}
}

// Eventually asks done until it reports true or within has passed, and
// reports whether it did.
func Eventually(within time.Duration, done func() bool) bool {
	deadline := time.Now().Add(within)
	for pause := firstPause; !done(); pause = min(2*pause, maxPause) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
	return true
}

// FreePort returns a loopback TCP port nobody listens on right now.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// FreeAddr returns "127.0.0.1:<port>" with a port nobody listens on right
// now.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(FreePort(tb)))
}

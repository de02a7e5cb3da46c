package testsupport

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// NotifySocket is the datagram socket systemd listens on for a
// Type=notify service: point NOTIFY_SOCKET at Path.
type NotifySocket struct {
	// Path is the socket's file name.
	Path string
	conn *net.UnixConn
}

// NewNotifySocket listens on a fresh socket in the test's temporary
// folder; it closes when the test ends.
func NewNotifySocket(tb testing.TB) *NotifySocket {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &NotifySocket{Path: path, conn: c}
}

// Next returns the next notification, or "" when none arrives within wait.
func (s *NotifySocket) Next(wait time.Duration) string {
	msg, ok := s.read(time.Now().Add(wait))
	if !ok {
		return ""
	}
	return msg
}

// Collect returns every notification that arrives within d.
func (s *NotifySocket) Collect(d time.Duration) []string {
	var got []string
	end := time.Now().Add(d)
	for {
		msg, ok := s.read(end)
		if !ok {
			return got
		}
		got = append(got, msg)
	}
}

// WaitFor returns the first notification starting with prefix within d,
// and everything received before it; it fails the test when none comes.
func (s *NotifySocket) WaitFor(tb testing.TB, prefix string, d time.Duration) (string, []string) {
	tb.Helper()
	var before []string
	end := time.Now().Add(d)
	for {
		msg, ok := s.read(end)
		if !ok {
			tb.Fatalf("no %q notification within %v (received %q)", prefix, d, before)
		}
		if strings.HasPrefix(msg, prefix) {
			return msg, before
		}
		before = append(before, msg)
	}
}

func (s *NotifySocket) read(deadline time.Time) (string, bool) {
	buf := make([]byte, 4096)
	_ = s.conn.SetReadDeadline(deadline)
	n, err := s.conn.Read(buf)
	if err != nil {
		return "", false
	}
	return string(buf[:n]), true
}

package testsupport

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSyncBufferConcurrentWrites(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
			}
		})
	}
	wg.Wait()
	if got := len(b.String()); got != 800 {
		t.Errorf("%d bytes, want 800", got)
	}
}

func TestStartLines(t *testing.T) {
	cmd := exec.Command("sh", "-c", "printf 'one\\ntwo\\n'; printf 'not this' >&2")
	var got []string
	for line := range StartLines(t, cmd) {
		got = append(got, line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "one" || got[1] != "two" {
		t.Errorf("lines %q, want [one two]", got)
	}
}

func TestFirstDifference(t *testing.T) {
	for _, c := range []struct{ got, want, says string }{
		{"a\nb\n", "a\nc\n", `line 2:` + "\n" + `  file: "c"` + "\n" + `  code: "b"`},
		{"a\n", "a\nb", `line 2:`},
		{"same", "same", "(no line differs)"},
	} {
		if got := FirstDifference(c.got, c.want); !strings.HasPrefix(got, c.says) {
			t.Errorf("FirstDifference(%q, %q) = %q, want it to start with %q", c.got, c.want, got, c.says)
		}
	}
}

func TestGoldenOnceLeavesAnExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.golden")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, same := GoldenOnce(t, path, []byte("new"))
	if same || string(want) != "old" {
		t.Errorf("GoldenOnce = %q, %v; want the file's content and false", want, same)
	}
}

func TestRealImage(t *testing.T) {
	a, b := RealImage(t, "el2004"), RealImage(t, "el2004.bin")
	if len(a) < 128 || string(a) != string(b) {
		t.Errorf("RealImage: %d and %d bytes, want the same image of at least 128", len(a), len(b))
	}
}

func TestNotifySocket(t *testing.T) {
	s := NewNotifySocket(t)
	if got := s.Next(10 * time.Millisecond); got != "" {
		t.Fatalf("Next on a quiet socket = %q", got)
	}
	send := func(msg string) {
		t.Helper()
		c, err := netDial(s.Path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	send("STATUS=starting")
	send("READY=1")
	send("WATCHDOG=1")
	msg, before := s.WaitFor(t, "READY=", time.Second)
	if msg != "READY=1" || len(before) != 1 || before[0] != "STATUS=starting" {
		t.Errorf("WaitFor = %q after %q", msg, before)
	}
	if got := s.Collect(50 * time.Millisecond); len(got) != 1 || got[0] != "WATCHDOG=1" {
		t.Errorf("Collect = %q", got)
	}
}

func TestEventually(t *testing.T) {
	n := 0
	if !Eventually(time.Second, func() bool { n++; return n == 3 }) {
		t.Error("Eventually gave up on a condition that turns true")
	}
	if Eventually(30*time.Millisecond, func() bool { return false }) {
		t.Error("Eventually reported a condition that never turns true")
	}
}

func TestFreeAddr(t *testing.T) {
	if a := FreeAddr(t); !strings.HasPrefix(a, "127.0.0.1:") || strings.HasSuffix(a, ":0") {
		t.Errorf("FreeAddr = %q", a)
	}
}

func netDial(path string) (*net.UnixConn, error) {
	return net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
}

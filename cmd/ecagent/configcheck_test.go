package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// TestConfigCheckRefusesAFIFO: `ecagent config check FIFO` with nobody
// writing to the FIFO exits 2 at once with an error saying what the file
// is, instead of waiting in open for a writer, deaf to SIGINT and SIGTERM.
// The real binary runs it, so that a wait shows as a process that does not
// end, and that ignores an interrupt.
func TestConfigCheckRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "ecagent.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "config", "check", fifo)
	cmd.Env = append(os.Environ(), "ECAGENT_TEST_MAIN=1")
	var stderr testsupport.SyncBuffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case err = <-done:
			t.Errorf("config check of a FIFO waited 10 s, until SIGINT (%v)", err)
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("config check of a FIFO waited 10 s and ignored SIGINT for 5 s more")
		}
	}
	took := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitUsage {
		t.Errorf("config check of a FIFO: %v, want exit %d", err, exitUsage)
	}
	if !strings.Contains(stderr.String(), fifo+" is a FIFO (named pipe), not a regular file") {
		t.Errorf("config check of a FIFO says %q", stderr.String())
	}
	t.Logf("config check of a FIFO: %v in %v: %s", err, took.Round(time.Millisecond), strings.TrimSpace(stderr.String()))
}

// TestConfigCheckRefusesWhatIsNoFile: a device, a socket and a directory
// are refused with exit 2 before anything is read, each named for what it
// is; a symbolic link to a configuration file is followed.
func TestConfigCheckRefusesWhatIsNoFile(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, c := range []struct{ path, what string }{
		{"/dev/null", "a character device"},
		{"/dev/zero", "a character device"},
		{sock, "a socket"},
		{dir, "a directory"},
	} {
		code, out, errOut := runCLI(t, context.Background(), nil, "config", "check", c.path)
		if code != exitUsage || !strings.Contains(errOut, c.path+" is "+c.what+", not a regular file") {
			t.Errorf("config check %s: exit %d, stdout %q, stderr %q; want %d naming %s", c.path, code, out, errOut, exitUsage, c.what)
		}
	}
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("cycle:\n  period: 1ms\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.yaml")
	if err := os.Symlink(good, link); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runCLI(t, context.Background(), nil, "config", "check", link); code != exitOK {
		t.Errorf("config check of a link to a file: exit %d, %q %q", code, out, errOut)
	}
}

package maintenance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// The tests here play another local user with a real second uid: the
// test binary, copied where every user may run it, runs as nobody in one
// of the helper modes below (TestMain), as a squatter of the socket's
// place, as a server of a socket it was handed, or as a client.

// nobody is the other user.
const nobody = 65534

// helperEnv selects a helper mode of the test binary.
const helperEnv = "ECAGENT_CONTROL_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Args[1:]))
	}
	code := m.Run()
	if helperBin.dir != "" {
		_ = os.RemoveAll(helperBin.dir)
	}
	os.Exit(code)
}

// runHelper runs a helper mode:
//
//   - squat DIR [SEGMENT]: creates DIR (mode 0755) and serves DIR/ctl
//     (mode 0777) as a forger would; with SEGMENT, creates that file first,
//     as if it were the agent's segment;
//   - serve-fd: listens on the bound socket inherited as fd 3 and serves it
//     as a forger would;
//   - client PATH: connects to PATH, says hello and prints the answer.
//
// A forger prints "ready" once it listens and then "request LINE" for each
// request, answering each with success.
func runHelper(mode string, args []string) int {
	switch mode {
	case "squat", "serve-fd":
		var ln net.Listener
		var err error
		if mode == "squat" {
			ln, err = squat(args)
		} else {
			if err = syscall.Listen(3, 8); err == nil {
				ln, err = net.FileListener(os.NewFile(3, "socket"))
			}
		}
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		fmt.Println("ready")
		forge(ln)
		return 0
	case "client":
		c, err := net.Dial("unix", args[0])
		if err != nil {
			fmt.Println("error:", err)
			return 1
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, `{"op":"hello"}`+"\n"); err != nil {
			fmt.Println("error:", err)
			return 1
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		fmt.Printf("answer %s", line)
		if err != nil {
			fmt.Println("error:", err)
		}
		return 0
	}
	fmt.Println("unknown helper mode", mode)
	return 2
}

// squat makes the socket's place as another user can in a directory
// anyone may write.
func squat(args []string) (net.Listener, error) {
	if len(args) > 1 {
		if err := os.WriteFile(args[1], nil, 0o600); err != nil {
			return nil, err
		}
	}
	if err := os.Mkdir(args[0], 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(args[0], SocketName)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	return ln, os.Chmod(path, 0o777)
}

// forge answers every request with success, printing it.
func forge(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			in := bufio.NewScanner(c)
			for in.Scan() {
				fmt.Printf("request %s\n", in.Text())
				answer := `{"result":{}}`
				if strings.Contains(in.Text(), `"hello"`) {
					answer = `{"result":{"interface":"","slaves":0}}`
				}
				if _, err := io.WriteString(c, answer+"\n"); err != nil {
					return
				}
			}
		}()
	}
}

// helperBin is the test binary copied where nobody may run it.
var helperBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// asNobody starts the test binary as user nobody, with the supplementary
// groups given, in helper mode with args, and returns its output lines.
// The process is killed at the end of the test.
func asNobody(t *testing.T, groups []uint32, extra []*os.File, mode string, args ...string) <-chan string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("playing another user needs root")
	}
	b := &helperBin
	b.once.Do(func() {
		self, err := os.Executable()
		if err != nil {
			b.err = err
			return
		}
		if b.dir, b.err = os.MkdirTemp("", "ecagent-control-test"); b.err != nil {
			return
		}
		data, err := os.ReadFile(self)
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(b.dir, "control.test")
		if b.err = os.WriteFile(b.path, data, 0o755); b.err == nil {
			b.err = os.Chmod(b.dir, 0o755)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	cmd := exec.Command(b.path, args...)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.Dir = "/"
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody, Groups: groups}}
	cmd.Stderr = os.Stderr
	lines := testsupport.StartLines(t, cmd)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return lines
}

// next returns the helper's next line, failing the test after a while.
func next(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the helper ended")
		}
		return l
	case <-time.After(20 * time.Second):
		t.Fatal("no line from the helper within 20 s")
	}
	return ""
}

// noRequest fails the test if the forger got a request.
func noRequest(t *testing.T, lines <-chan string) {
	t.Helper()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return
			}
			t.Errorf("the forger got %q", l)
		default:
			return
		}
	}
}

// sharedDir returns a new directory of mode (e.g. 0777 and sticky, as /dev/shm)
// that every user can reach.
func sharedDir(t *testing.T, mode os.FileMode) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ecagent-control-shared")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// segmentFile creates a segment file of this user, as the agent does, in
// a temporary directory and returns its path.
func segmentFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "seg.shm")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSquattedSocketDirectory: another user (a real process of nobody)
// made the socket's directory beside the segment, in a directory anyone
// may write, as /dev/shm, and serves a forged socket in it. The server
// refuses to start there, says whose it is and leaves it alone; a client
// (root) refuses to talk to it, whether the segment is the agent's or the
// squatter's too, and the forger gets no request.
func TestSquattedSocketDirectory(t *testing.T) {
	for _, ownSegment := range []bool{true, false} {
		name := "agent's segment"
		if !ownSegment {
			name = "squatter's segment"
		}
		t.Run(name, func(t *testing.T) {
			shm := filepath.Join(sharedDir(t, 0o777|os.ModeSticky), "ecagent.shm")
			args := []string{SocketDir(shm)}
			if ownSegment {
				if err := os.WriteFile(shm, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			} else {
				args = append(args, shm)
			}
			lines := asNobody(t, nil, nil, "squat", args...)
			if l := next(t, lines); l != "ready" {
				t.Fatalf("squatter: %s", l)
			}
			if ownSegment {
				s := newSegment(t, "EK1100", "EL2004")
				srv, err := Listen(shm, s.h, slogDiscard())
				if err == nil {
					srv.Close()
					t.Fatal("the server started in another user's directory")
				}
				t.Logf("server: %v", err)
				if !strings.Contains(err.Error(), fmt.Sprintf("belongs to user %d", nobody)) {
					t.Errorf("refusal %q does not say whose the directory is", err)
				}
				if fi, err := os.Lstat(SocketPath(shm)); err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o777 {
					t.Errorf("the squatter's socket was changed: %v, %v", fi, err)
				}
			}
			err := dialRefused(t, shm, "the squatter's socket")
			if errors.Is(err, ErrNotServed) || !strings.Contains(err.Error(), fmt.Sprintf("user %d", nobody)) {
				t.Errorf("client: %v, want a refusal naming user %d", err, nobody)
			}
			noRequest(t, lines)
		})
	}
}

// dialRefused dials the socket of shm, served by what, and returns the
// client's refusal; a client that talks (it connected: it writes a
// register) fails t.
func dialRefused(t *testing.T, shm, what string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := Dial(ctx, shm)
	if err == nil {
		_, err = cl.Call(ctx, Request{Op: OpRegWrite, Slave: 1, Addr: 0x0120, Data: []byte{2, 0}, Write: true})
		cl.Close()
		t.Fatalf("the client talked to %s (%v)", what, err)
	}
	t.Logf("client: %v", err)
	return err
}

// TestSymlinkAtTheSocketsPlace: a symbolic link another user made at the
// socket directory's name, or one at the socket's name in the agent's own
// directory, is refused, never followed: the directory or file it points
// to is neither changed nor written in.
func TestSymlinkAtTheSocketsPlace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting another user's link needs root")
	}
	s := newSegment(t, "EK1100", "EL2004")
	victim := t.TempDir()
	if err := os.Chmod(victim, 0o755); err != nil {
		t.Fatal(err)
	}
	victimFile := filepath.Join(victim, "file")
	if err := os.WriteFile(victimFile, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	untouched := func(when string) {
		t.Helper()
		entries, _ := os.ReadDir(victim)
		if fi, err := os.Stat(victim); err != nil || fi.Mode().Perm() != 0o755 || len(entries) != 1 {
			t.Errorf("%s: the directory a link pointed to changed: %v, %d entries", when, fi.Mode(), len(entries))
		}
		if fi, err := os.Stat(victimFile); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: the file a link pointed to changed: %v", when, fi.Mode())
		}
	}

	shm := filepath.Join(sharedDir(t, 0o777|os.ModeSticky), "ecagent.shm")
	if err := os.WriteFile(shm, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, SocketDir(shm)); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(SocketDir(shm), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	wantRefused := func(what, says string) {
		t.Helper()
		if srv, err := Listen(shm, s.h, slogDiscard()); err == nil {
			srv.Close()
			t.Errorf("the server %s", what)
		} else if !strings.Contains(err.Error(), says) {
			t.Errorf("refusal %q does not say %q", err, says)
		}
	}
	wantRefused("served through a symbolic link", "is a symbolic link")
	if _, err := Dial(context.Background(), shm); err == nil || errors.Is(err, ErrNotServed) || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("client through a symbolic link: %v, want a refusal", err)
	}
	untouched("link as the directory")

	// The agent's own directory with a link at the socket's name.
	if err := os.Remove(SocketDir(shm)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(SocketDir(shm), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victimFile, SocketPath(shm)); err != nil {
		t.Fatal(err)
	}
	wantRefused("replaced a symbolic link at the socket's name", "not a socket")
	untouched("link as the socket")
}

// TestClientChecksTheServersUser: the socket's directory and the segment
// are root's, but the process that serves the socket runs as nobody (it
// was handed the bound socket): the client refuses to talk to it.
func TestClientChecksTheServersUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("playing another user needs root")
	}
	shm := segmentFile(t)
	if err := os.Mkdir(SocketDir(shm), DirMode); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: SocketPath(shm)}); err != nil {
		t.Fatal(err)
	}
	sock := os.NewFile(uintptr(fd), "socket")
	lines := asNobody(t, nil, []*os.File{sock}, "serve-fd")
	sock.Close()
	if l := next(t, lines); l != "ready" {
		t.Fatalf("server: %s", l)
	}
	err = dialRefused(t, shm, fmt.Sprintf("a server of user %d", nobody))
	if errors.Is(err, ErrNotServed) || !strings.Contains(err.Error(), fmt.Sprintf("process of user %d", nobody)) {
		t.Errorf("client: %v, want a refusal naming the server's user", err)
	}
	noRequest(t, lines)
}

// TestServerChecksTheClientsUser: with the socket's modes opened to
// everyone (a mistake the server must survive), a client of another user
// is refused with an error and its request is not carried out; the same
// user in the socket directory's group is served.
func TestServerChecksTheClientsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("playing another user needs root")
	}
	s := newSegment(t, "EK1100", "EL2004")
	shm := filepath.Join(sharedDir(t, 0o755), "seg.shm")
	srv, err := Listen(shm, s.h, slogDiscard())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	served := srv.Start(ctx)
	defer func() { cancel(); <-served }()
	if err := os.Chmod(SocketDir(shm), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(SocketPath(shm), 0o666); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(SocketDir(shm))
	if err != nil {
		t.Fatal(err)
	}
	group := fi.Sys().(*syscall.Stat_t).Gid

	refused := next(t, asNobody(t, nil, nil, "client", SocketPath(shm)))
	var resp Response
	if err := json.Unmarshal([]byte(strings.TrimPrefix(refused, "answer ")), &resp); err != nil || resp.Result != nil ||
		!strings.Contains(resp.Error, fmt.Sprintf("uid %d is neither root", nobody)) {
		t.Errorf("client of user %d: %s, want a refusal naming it", nobody, refused)
	}
	member := next(t, asNobody(t, []uint32{group}, nil, "client", SocketPath(shm)))
	resp = Response{}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(member, "answer ")), &resp); err != nil || resp.Error != "" {
		t.Errorf("client of user %d in group %d: %s, want hello's answer", nobody, group, member)
	}
}

// TestClientTrustsTheAgentsOwnDirectory: an agent of a dedicated user
// (nobody here), whose segment is in a directory of that user's own that
// nobody else may write (as /run/ecagent of the systemd unit), is talked
// to by root.
func TestClientTrustsTheAgentsOwnDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("playing another user needs root")
	}
	run := filepath.Join(sharedDir(t, 0o755), "run")
	if err := os.Mkdir(run, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(run, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	shm := filepath.Join(run, "ecagent.shm")
	lines := asNobody(t, nil, nil, "squat", SocketDir(shm), shm)
	if l := next(t, lines); l != "ready" {
		t.Fatalf("agent: %s", l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := Dial(ctx, shm)
	if err != nil {
		t.Fatalf("root refuses the agent of user %d in its own directory: %v", nobody, err)
	}
	defer cl.Close()
	if _, err := cl.Call(ctx, Request{Op: OpHello}); err != nil {
		t.Fatal(err)
	}
	if l := next(t, lines); !strings.Contains(l, `"op":"hello"`) {
		t.Errorf("the agent got %q, want the hello", l)
	}
}

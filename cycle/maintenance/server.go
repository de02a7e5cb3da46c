package maintenance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/master"
)

// maxRequestBytes bounds one request line (an FoE file is the largest:
// up to 16 MiB as base64); the buffer grows to it only when needed.
const maxRequestBytes = 24 << 20

// requestTimeout bounds one request's work.
const requestTimeout = 2 * time.Minute

// Server serves a Handler on a Unix stream socket.
type Server struct {
	h    *Handler
	log  *slog.Logger
	ln   *net.UnixListener
	dir  *socketDir
	path string
	// mu lets one request at a time use the master: a maintenance tool's
	// requests are few, and mailbox transfers of two would contend.
	mu sync.Mutex
	// conns counts the connections being served.
	conns sync.WaitGroup
	// closeOnce removes the socket and its directory once.
	closeOnce sync.Once
	closeErr  error
}

// Listen serves the control socket of the segment shm, SocketPath(shm), in
// its directory SocketDir(shm), which it creates (see makeSocketDir): a
// directory another user made, or a symbolic link there, is refused, as is
// anything at the socket's name but a stale socket of this user, which is
// replaced. The socket gets SocketMode and the directory DirMode, with the
// group the directory has (this process's, or that of a set-group-ID
// parent).
func Listen(shm string, h *Handler, log *slog.Logger) (*Server, error) {
	dir, err := makeSocketDir(SocketDir(shm))
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	ln, err := dir.listen()
	if err != nil {
		dir.close()
		return nil, fmt.Errorf("control: %w", err)
	}
	return &Server{h: h, log: log, ln: ln, dir: dir, path: SocketPath(shm)}, nil
}

// listen binds and listens on the socket in d, replacing a stale socket of
// this process's user nobody answers on.
func (d *socketDir) listen() (*net.UnixListener, error) {
	path := filepath.Join(d.path, SocketName)
	st, err := d.stat(SocketName)
	switch {
	case errors.Is(err, unix.ENOENT):
	case err != nil:
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK || int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("%s is not a socket of this process's user but %s of user %d: refusing to replace it",
			path, typeName(st.Mode), st.Uid)
	default:
		if c, err := net.DialTimeout("unix", d.at(SocketName), time.Second); err == nil {
			_ = c.Close()
			return nil, fmt.Errorf("%s: another process of this user serves it", path)
		}
		if err := unix.Unlinkat(d.fd, SocketName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: d.at(SocketName), Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false) // the name it was bound by leads through this process's descriptor
	// In a directory only this user may write, the name is the socket
	// just bound: nobody can have swapped a link in.
	if err := unix.Fchmodat(d.fd, SocketName, SocketMode, 0); err != nil {
		_ = ln.Close()
		_ = unix.Unlinkat(d.fd, SocketName, 0)
		return nil, &os.PathError{Op: "chmod", Path: path, Err: err}
	}
	return ln, nil
}

// Path returns the socket's path.
func (s *Server) Path() string { return s.path }

// Start serves connections in a goroutine of their own until ctx ends,
// then closes the socket (removing it) and waits for the connections'
// goroutines; the returned channel closes then. Everything it allocates
// up front is allocated before it returns, so that a cycle starting
// afterwards sees no allocation from it until a client connects.
func (s *Server) Start(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { _ = s.ln.Close() })
	go func() {
		defer close(done)
		defer stop()
		s.serve(ctx)
	}()
	return done
}

// serve accepts connections until the listener is closed.
func (s *Server) serve(ctx context.Context) {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("control socket: accept", "err", err)
			}
			break
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			s.serveConn(ctx, c)
		}()
	}
	_ = s.Close()
	s.conns.Wait()
}

// Close stops accepting connections and removes the socket and its
// directory (when empty).
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			s.closeErr = err
		}
		if err := unix.Unlinkat(s.dir.fd, SocketName, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			s.closeErr = errors.Join(s.closeErr, err)
		}
		// The directory, if it is still the one served in: an empty
		// directory is all rmdir removes.
		var st unix.Stat_t
		if unix.Fstat(s.dir.fd, &st) == nil {
			if fi, err := os.Lstat(s.dir.path); err == nil && fi.IsDir() {
				if sys, ok := fi.Sys().(*syscall.Stat_t); ok && sys.Dev == st.Dev && sys.Ino == st.Ino {
					_ = unix.Rmdir(s.dir.path)
				}
			}
		}
		s.dir.close()
	})
	return s.closeErr
}

// admit returns nil if p may use the socket: root, this process's user, or
// a member of the socket directory's group, whom its mode lets in.
func (s *Server) admit(p peer) error {
	if p.uid == 0 || p.uid == os.Geteuid() || p.inGroup(s.dir.gid) {
		return nil
	}
	return fmt.Errorf("refused: uid %d is neither root, the agent's user (uid %d) nor in its group (gid %d)",
		p.uid, os.Geteuid(), s.dir.gid)
}

func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	p, err := peerOf(c)
	if err != nil {
		s.log.Warn("control socket: peer credentials", "err", err)
		return
	}
	enc := json.NewEncoder(c)
	if err := s.admit(p); err != nil {
		s.log.Warn("maintenance connection refused", "uid", p.uid, "gid", p.gid, "pid", p.pid, "err", err)
		// The refusal is the answer to the request the client sends
		// first: it is read (up to a second, and discarded) so that
		// the client's write does not fail before it reads why.
		_ = c.SetDeadline(time.Now().Add(time.Second))
		_ = enc.Encode(&Response{Error: err.Error()})
		_ = c.CloseWrite()
		_, _ = io.Copy(io.Discard, io.LimitReader(c, maxRequestBytes))
		return
	}
	uid := p.uid
	in := bufio.NewScanner(c)
	in.Buffer(make([]byte, 0, 4096), maxRequestBytes)
	for in.Scan() {
		var req Request
		var resp Response
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			resp.Error = fmt.Sprintf("bad request: %v", err)
		} else {
			resp = s.do(ctx, req, uid, enc)
		}
		if err := enc.Encode(&resp); err != nil {
			return
		}
	}
}

// do runs one request under the server's lock; a request that asks for
// progress gets its Progress lines on enc, and ends when they cannot be
// sent (the client went away).
func (s *Server) do(ctx context.Context, req Request, uid int, enc *json.Encoder) Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	timeout := requestTimeout
	if req.Op == OpFoEWrite || req.Op == OpFoERead {
		timeout = foeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if req.Progress {
		ctx = WithProgress(ctx, func(done, total int) {
			if enc.Encode(&Response{Progress: &Progress{Done: done, Total: total}}) != nil {
				cancel()
			}
		})
	}
	res, err := s.h.Call(ctx, req, uid)
	if err != nil {
		if req.IsWrite() {
			s.log.Warn("maintenance request failed", "op", req.Op, "slave", req.Slave, "uid", uid, "err", err)
		}
		resp := Response{Error: err.Error()}
		var refused *master.ALStateError
		if errors.As(err, &refused) {
			resp.Refused = refused
		}
		if code, meaning, ok := FoECode(err); ok {
			resp.FoE = &FoEError{Code: code, Meaning: meaning}
		}
		return resp
	}
	if req.IsWrite() {
		s.log.Info("maintenance request", "op", req.Op, "slave", req.Slave, "uid", uid)
	}
	return Response{Result: res}
}

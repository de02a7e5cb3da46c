package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/master"
)

// SocketMode is the permission of the control socket: the owner and its
// group may connect.
const SocketMode = 0o660

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
	path string
	// mu lets one request at a time use the master: a maintenance tool's
	// requests are few, and mailbox transfers of two would contend.
	mu sync.Mutex
	// conns counts the connections being served.
	conns sync.WaitGroup
}

// Listen creates the socket at path (replacing a stale one nobody
// answers on) with SocketMode and, when gid ≥ 0, that group.
func Listen(path string, gid int, h *Handler, log *slog.Logger) (*Server, error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		_ = c.Close()
		return nil, fmt.Errorf("control: %s: another process serves it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("control: remove stale socket: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, SocketMode); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("control: %w", err)
	}
	if gid >= 0 {
		if err := os.Chown(path, -1, gid); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("control: group of %s: %w", path, err)
		}
	}
	return &Server{h: h, log: log, ln: ln, path: path}, nil
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
	_ = s.ln.Close()
	s.conns.Wait()
}

// Close stops accepting connections and removes the socket.
func (s *Server) Close() error { return s.ln.Close() }

// peerUID returns the user id of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if credErr != nil {
		return -1, credErr
	}
	return int(cred.Uid), nil
}

func (s *Server) serveConn(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	uid, err := peerUID(c)
	if err != nil {
		s.log.Warn("control socket: peer credentials", "err", err)
		return
	}
	in := bufio.NewScanner(c)
	in.Buffer(make([]byte, 0, 4096), maxRequestBytes)
	enc := json.NewEncoder(c)
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

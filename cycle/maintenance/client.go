package maintenance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"
)

// Client is a connection to a cycle process's control socket.
type Client struct {
	c   net.Conn
	in  *bufio.Scanner
	enc *json.Encoder
}

// Dial connects to the control socket of the cycle process whose segment
// is shm. It fails at once, with an error matching ErrNotServed, when no
// process serves it (no socket directory, no segment, no socket, or a
// stale one). Any other error is a socket that is there but that it
// refuses to trust: its directory or the segment is not the agent's user's
// (see openTrusted), or the process that serves it runs as neither root nor
// that user (SO_PEERCRED).
func Dial(ctx context.Context, shm string) (*Client, error) {
	dir, err := openTrusted(shm)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	defer dir.close()
	path := SocketPath(shm)
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", dir.at(SocketName))
	if err != nil {
		var errno syscall.Errno
		switch {
		case errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED):
			return nil, fmt.Errorf("control: %s: %w", path, ErrNotServed)
		case errors.Is(err, syscall.EACCES):
			return nil, fmt.Errorf("control: connect to %s: %w (root, the agent's user and its group may)", path, syscall.EACCES)
		case errors.As(err, &errno): // the error names the directory's descriptor, not path
			return nil, fmt.Errorf("control: connect to %s: %w", path, errno)
		}
		return nil, fmt.Errorf("control: connect to %s: %w", path, err)
	}
	p, err := peerOf(c.(*net.UnixConn))
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("control: %s: %w", path, err)
	}
	if p.uid != 0 && p.uid != dir.uid {
		_ = c.Close()
		return nil, fmt.Errorf("control: %s is served by a process of user %d (pid %d), neither root nor the agent's user %d: "+
			"refusing to talk to it", path, p.uid, p.pid, dir.uid)
	}
	in := bufio.NewScanner(c)
	in.Buffer(make([]byte, 0, 4096), 2*maxRequestBytes)
	return &Client{c: c, in: in, enc: json.NewEncoder(c)}, nil
}

// Close closes the connection.
func (cl *Client) Close() error { return cl.c.Close() }

// send bounds the connection's reads and writes by ctx, its deadline and
// its cancellation, until the returned stop is called, and sends req.
func (cl *Client) send(ctx context.Context, req *Request) (stop func() bool, err error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = cl.c.SetDeadline(dl)
	} else {
		_ = cl.c.SetDeadline(time.Time{})
	}
	stop = context.AfterFunc(ctx, func() { _ = cl.c.SetDeadline(time.Now()) })
	if err = cl.enc.Encode(req); err != nil {
		return stop, fmt.Errorf("control: send %s: %w", req.Op, err)
	}
	return stop, nil
}

// Call sends req and returns the result's JSON, or the endpoint's error
// as a *RemoteError. ctx bounds the wait.
func (cl *Client) Call(ctx context.Context, req Request) (json.RawMessage, error) {
	stop, err := cl.send(ctx, &req)
	defer stop()
	if err != nil {
		return nil, err
	}
	resp, err := cl.next(ctx, req.Op)
	if err != nil {
		return nil, err
	}
	if resp.Error != "" {
		return nil, &RemoteError{Msg: resp.Error, Refused: resp.Refused}
	}
	return resp.Result, nil
}

// next reads one response line of the request op.
func (cl *Client) next(ctx context.Context, op Op) (Response, error) {
	var resp Response
	if !cl.in.Scan() {
		err := cl.in.Err()
		if err == nil {
			err = fmt.Errorf("connection closed")
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return resp, fmt.Errorf("control: %s: %w", op, err)
	}
	if err := json.Unmarshal(cl.in.Bytes(), &resp); err != nil {
		return resp, fmt.Errorf("control: %s: bad response: %w", op, err)
	}
	return resp, nil
}

package control

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"time"
)

// Client is a connection to a cycle process's control socket.
type Client struct {
	c   net.Conn
	in  *bufio.Scanner
	enc *json.Encoder
}

// Dial connects to the control socket at path. It fails at once when no
// process serves it (no socket, or a stale one).
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	in := bufio.NewScanner(c)
	in.Buffer(make([]byte, 0, 4096), 2*maxRequestBytes)
	return &Client{c: c, in: in, enc: json.NewEncoder(c)}, nil
}

// Close closes the connection.
func (cl *Client) Close() error { return cl.c.Close() }

// Call sends req and returns the result's JSON, or the endpoint's error
// as a *RemoteError. ctx bounds the wait.
func (cl *Client) Call(ctx context.Context, req Request) (json.RawMessage, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = cl.c.SetDeadline(dl)
	} else {
		_ = cl.c.SetDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = cl.c.SetDeadline(time.Now()) })
	defer stop()
	if err := cl.enc.Encode(&req); err != nil {
		return nil, fmt.Errorf("control: send %s: %w", req.Op, err)
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

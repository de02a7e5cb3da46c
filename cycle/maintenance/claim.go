package maintenance

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"
)

// The interface claim: who drives the segment on a network interface.
//
// Two masters on one segment disturb each other: each one's frames change
// what the other's slaves answer, and every cycle of the agent sees a
// working counter error. A process that opens an interface as a master (a
// cycle process, or a maintenance command opening the segment itself)
// first binds the abstract Unix socket ClaimName(iface). The kernel keeps
// one binding per name and network namespace, as it keeps interface names,
// and drops it when the process ends, however it ends: no file is left
// behind. A second master finds the name bound, connects, and learns from
// the kernel (SO_PEERCRED) who holds it, pid and uid, and from the holder
// the shared-memory segment through which its maintenance socket is
// reached.

// ClaimName returns the abstract socket name (Go's "@" prefix) of the
// claim on network interface iface.
func ClaimName(iface string) string { return "@ecagent/iface/" + iface }

// ClaimHolder is who holds an interface's claim.
type ClaimHolder struct {
	// PID and UID are the holder's, as the kernel tells them.
	PID int `json:"pid"`
	UID int `json:"uid"`
	// SHM is the shared-memory segment of the holder, a cycle process
	// (its maintenance socket is SocketPath(SHM)); empty for a
	// maintenance command that opened the segment itself.
	SHM string `json:"shm"`
}

// ClaimedError is the refusal of a claim another process holds.
type ClaimedError struct {
	Interface string
	Holder    ClaimHolder
}

// Error names the holder.
func (e *ClaimedError) Error() string {
	if e.Holder.SHM == "" {
		return fmt.Sprintf("interface %s is in use by another master: pid %d (uid %d), a maintenance command that opened it",
			e.Interface, e.Holder.PID, e.Holder.UID)
	}
	return fmt.Sprintf("interface %s is driven by the agent whose cycle process is pid %d (uid %d), segment %s (maintenance socket %s)",
		e.Interface, e.Holder.PID, e.Holder.UID, e.Holder.SHM, SocketPath(e.Holder.SHM))
}

// Claim is a held interface claim.
type Claim struct {
	ln   *net.UnixListener
	line []byte
}

// ClaimInterface claims network interface iface for this process, whose
// shared-memory segment is shm ("" for none). When another process holds
// the claim it returns a *ClaimedError naming it. Serve answers who holds
// it; Close releases it (so does the end of the process).
func ClaimInterface(ctx context.Context, iface, shm string) (*Claim, error) {
	line, err := json.Marshal(ClaimHolder{PID: os.Getpid(), UID: os.Geteuid(), SHM: shm})
	if err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: ClaimName(iface), Net: "unix"})
	if err == nil {
		return &Claim{ln: ln, line: append(line, '\n')}, nil
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("claim interface %s: %w", iface, err)
	}
	h, ok, werr := WhoClaims(ctx, iface)
	switch {
	case werr != nil:
		return nil, fmt.Errorf("claim interface %s: it is claimed, but its holder does not say who it is: %w", iface, werr)
	case !ok:
		// Released in between: one more try.
		if ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: ClaimName(iface), Net: "unix"}); err == nil {
			return &Claim{ln: ln, line: append(line, '\n')}, nil
		}
		return nil, fmt.Errorf("claim interface %s: %w", iface, err)
	}
	return nil, &ClaimedError{Interface: iface, Holder: h}
}

// Serve answers who holds the claim until ctx ends or Close, in a
// goroutine of its own; it allocates only when a process asks.
func (c *Claim) Serve(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { _ = c.ln.Close() })
	go func() {
		defer stop()
		for {
			conn, err := c.ln.AcceptUnix()
			if err != nil {
				return
			}
			_ = conn.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = conn.Write(c.line)
			_ = conn.Close()
		}
	}()
}

// Close releases the claim.
func (c *Claim) Close() error {
	if err := c.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

// WhoClaims returns the holder of interface iface's claim, and false when
// nobody holds it. The pid and uid are the kernel's (SO_PEERCRED); the
// segment is what the holder says.
func WhoClaims(ctx context.Context, iface string) (ClaimHolder, bool, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := d.DialContext(ctx, "unix", ClaimName(iface))
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return ClaimHolder{}, false, nil
		}
		return ClaimHolder{}, false, err
	}
	defer c.Close()
	p, err := peerOf(c.(*net.UnixConn))
	if err != nil {
		return ClaimHolder{}, false, err
	}
	h := ClaimHolder{PID: p.pid, UID: p.uid}
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetReadDeadline(dl)
	}
	in := bufio.NewScanner(c)
	if in.Scan() {
		var said ClaimHolder
		if json.Unmarshal(in.Bytes(), &said) == nil {
			h.SHM = said.SHM
		}
	}
	return h, true, nil
}

package broker

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"github.com/mochi-mqtt/server/v2/listeners"
)

// connListener wraps a mochi-mqtt listener to handle the end of each
// client connection itself. mochi-mqtt's listeners log whatever error a
// connection ended with at warning level and with an empty message, the
// server closing every connection on Close included (msg="" error="use
// of closed network connection"); here a connection that ended because
// its socket was closed (by the broker's Close) or the client went away
// is logged at debug level, any other error (a client breaking the
// protocol) at warning level with a message. Close waits for the handlers
// of the connections, so nothing is logged after it returns, and
// connections accepted once Close has begun are closed at once.
type connListener struct {
	listeners.Listener
	log *slog.Logger

	mu      sync.Mutex
	closing bool
	conns   map[net.Conn]struct{} // connections being handled
	idle    chan struct{}         // closed when closing and conns is empty
}

func newConnListener(l listeners.Listener) *connListener {
	return &connListener{Listener: l, log: slog.New(slog.DiscardHandler),
		conns: make(map[net.Conn]struct{}), idle: make(chan struct{})}
}

// Init implements listeners.Listener; log is the broker's, with the
// listener's id.
func (l *connListener) Init(log *slog.Logger) error {
	l.log = log
	return l.Listener.Init(log)
}

// Serve implements listeners.Listener.
func (l *connListener) Serve(establish listeners.EstablishFn) {
	l.Listener.Serve(func(id string, c net.Conn) error {
		l.mu.Lock()
		if l.closing {
			l.mu.Unlock()
			_ = c.Close()
			return nil
		}
		l.conns[c] = struct{}{}
		l.mu.Unlock()
		defer l.done(c) // after the logging: Close waits for it
		switch err := establish(id, c); {
		case err == nil:
		case connectionGone(err), errors.Is(err, errClientIDTaken): // the latter logged by the hook
			l.log.Debug("MQTT client connection closed", "remote", c.RemoteAddr().String(), "error", err)
		default:
			l.log.Warn("MQTT client connection failed", "remote", c.RemoteAddr().String(), "error", err)
		}
		return nil // logged here, not again by the listener
	})
}

// done ends the handling of connection c.
func (l *connListener) done(c net.Conn) {
	l.mu.Lock()
	delete(l.conns, c)
	l.signalIdleLocked()
	l.mu.Unlock()
}

// signalIdleLocked closes idle once closing has begun and no connection is
// left. l.mu is held.
func (l *connListener) signalIdleLocked() {
	if l.closing && len(l.conns) == 0 {
		select {
		case <-l.idle:
		default:
			close(l.idle)
		}
	}
}

// beginClose marks the listener as closing: connections accepted from now
// on are closed without a handler.
func (l *connListener) beginClose() {
	l.mu.Lock()
	l.closing = true
	l.signalIdleLocked()
	l.mu.Unlock()
}

// closeAll closes the sockets of the connections still being handled,
// which ends their reads and writes with an error, and returns their
// remote addresses.
func (l *connListener) closeAll() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	remotes := make([]string, 0, len(l.conns))
	for c := range l.conns {
		remotes = append(remotes, c.RemoteAddr().String())
		_ = c.Close()
	}
	return remotes
}

// idleC is closed once beginClose was called and no connection is being
// handled.
func (l *connListener) idleC() <-chan struct{} { return l.idle }

// connectionGone reports whether err is a connection's plain end: the
// client hung up, or the socket was closed under the reader.
func connectionGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

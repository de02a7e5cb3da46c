// Package broker runs the embedded MQTT broker (mochi-mqtt) that `ecagent
// run` starts when no broker is configured, so that the data can be seen
// flowing (mosquitto_sub -h 127.0.0.1 -t 'ecagent/#' -v) without any
// set-up. StartAuth admits the agent and operators with their
// credentials only (see Auth); Start accepts every client, for tests.
// Bind it to loopback either way.
package broker

import (
	"fmt"
	"log/slog"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// Broker is a running embedded broker.
type Broker struct {
	srv  *mochi.Server
	tcp  *connListener
	addr string
	log  *slog.Logger
}

// closeGrace is how long Close lets the broker end its clients'
// connections in order (a DISCONNECT to each) before it closes the sockets
// that are left, and then how long it waits for their handlers.
const closeGrace = time.Second

// Start starts a broker listening on addr (host:port; port 0 picks a
// free one) that accepts every client. Its own log goes to log at warning
// level and above.
func Start(addr string, log *slog.Logger) (*Broker, error) { return StartAuth(addr, log, nil) }

// StartAuth is Start with auth enforced: only the agent and operators are
// admitted, with their rights (nil admits every client).
func StartAuth(addr string, log *slog.Logger, a *Auth) (*Broker, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := mochi.New(&mochi.Options{
		InlineClient: false,
		Logger:       slog.New(levelFloor{Handler: log.Handler(), min: slog.LevelWarn}).With("component", "mqtt-broker"),
	})
	var hook mochi.Hook = new(auth.AllowHook)
	if a != nil {
		hook = &authHook{auth: *a, srv: srv, log: log}
	}
	if err := srv.AddHook(hook, nil); err != nil {
		return nil, fmt.Errorf("embedded MQTT broker: %w", err)
	}
	tcp := newConnListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: addr}))
	if err := srv.AddListener(tcp); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("embedded MQTT broker on %s: %w", addr, err)
	}
	if err := srv.Serve(); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("embedded MQTT broker: %w", err)
	}
	return &Broker{srv: srv, tcp: tcp, addr: tcp.Address(), log: log}, nil
}

// Addr returns the address the broker listens on.
func (b *Broker) Addr() string { return b.addr }

// URL returns the broker's URL for a client, tcp://host:port.
func (b *Broker) URL() string { return "tcp://" + b.addr }

// Close disconnects every client and stops the broker; it returns once
// the clients' connections are closed, within twice closeGrace. mochi-mqtt
// waits without a bound for each connection's handler, and a handler can
// wait for ever: a client that opened a socket and never sent CONNECT (no
// read deadline before it), one that connected while the broker was
// closing, one whose socket buffer is full because it stopped reading.
// After closeGrace, Close closes the sockets left, which ends those waits,
// and says so at warning level. A clean stop logs nothing above debug
// level.
func (b *Broker) Close() error {
	b.tcp.beginClose()
	closed := make(chan error, 1)
	go func() { closed <- b.srv.Close() }()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	forced := false // the sockets left were closed
	force := func() {
		remotes := b.tcp.closeAll()
		b.log.Warn("embedded MQTT broker: client connections did not end when it stopped; closed their sockets",
			"after", closeGrace, "connections", len(remotes), "remotes", remotes)
		forced = true
		t.Reset(closeGrace)
	}
	var err error
	select {
	case err = <-closed:
	case <-t.C:
		force()
		select {
		case err = <-closed:
		case <-t.C:
			return fmt.Errorf("embedded MQTT broker: did not stop within %v of closing its clients' sockets", closeGrace)
		}
	}
	// mochi-mqtt may stop before a handler it does not wait for has
	// ended (a socket that never sent CONNECT): the grace applies to those
	// as well, and then their sockets are closed too.
	for idle := false; !idle; {
		select {
		case <-b.tcp.idleC():
			idle = true
		case <-t.C:
			if forced {
				return fmt.Errorf("embedded MQTT broker: connection handlers still running %v after their sockets were closed", closeGrace)
			}
			force()
		}
	}
	if err != nil {
		return fmt.Errorf("embedded MQTT broker: %w", err)
	}
	return nil
}

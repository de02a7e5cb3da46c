package broker

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn/packet"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// A clean shutdown with clients still connected (the agent's own client
// among them) logs nothing at warning level: mochi-mqtt's listener warns
// with an empty message for every connection that ends, and the server
// ending them is no problem.
func TestBrokerCloseLogsNoWarning(t *testing.T) {
	var logs testsupport.SyncBuffer
	b, err := Start("127.0.0.1:0", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"agent", "viewer"} {
		c := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID(id).SetAutoReconnect(false))
		if tok := c.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() != nil {
			t.Fatal(tok.Error())
		}
		defer c.Disconnect(0)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Close has waited for the connections' handlers: their logging is
	// over.
	if out := logs.String(); strings.Contains(out, "level=WARN") || strings.Contains(out, "level=ERROR") {
		t.Errorf("a clean Close logged:\n%s", out)
	}
}

// warnings is a slog handler that passes warnings on to a channel.
type warnings chan slog.Record

func (w warnings) Enabled(context.Context, slog.Level) bool { return true }
func (w warnings) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w warnings) WithGroup(string) slog.Handler            { return w }
func (w warnings) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		w <- r
	}
	return nil
}

// A client that breaks the protocol still shows at warning level, with a
// message.
func TestBrokerWarnsOfAFailedConnection(t *testing.T) {
	warned := make(warnings, 10)
	b, err := Start("127.0.0.1:0", slog.New(warned))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{0xC0, 0x00}); err != nil { // PINGREQ before CONNECT
		t.Fatal(err)
	}
	r := <-warned
	var text strings.Builder
	r.Attrs(func(a slog.Attr) bool { text.WriteString(" " + a.String()); return true })
	if r.Message != "MQTT client connection failed" || !strings.Contains(text.String(), "first packet must be connect") {
		t.Errorf("warning %q%s, want the failed connection and its error", r.Message, text.String())
	}
}

// closeWithin runs b.Close and fails the test unless it returns within
// limit (the test then leaves the broker behind rather than hang).
func closeWithin(t *testing.T, b *Broker, limit time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- b.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
		t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(limit):
		t.Fatalf("Close has not returned after %v", limit)
	}
}

// expectClosed fails unless the broker closed c: a read ends (EOF or
// reset) within a few seconds, after whatever the broker still had queued.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 64<<10)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the broker left the connection open: %v", err)
			}
			return
		}
	}
}

// waitHandled waits until the broker handles n connections: Dial returns
// once the kernel has the connection, before the broker accepted it.
func waitHandled(t *testing.T, b *Broker, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		b.tcp.mu.Lock()
		got := len(b.tcp.conns)
		b.tcp.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker handles %d connections, want %d", got, n)
		}
	}
}

// connectPacket is an MQTT 3.1.1 CONNECT: clean session, no keep-alive
// (so nothing times the client out), client id "stuck".
var connectPacket = []byte{0x10, 17, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 0, 0, 5, 's', 't', 'u', 'c', 'k'}

// Close ends, within its bound, connections that would hold mochi-mqtt's
// Close for ever: a socket that never sent CONNECT, and a subscriber that
// stopped reading while the broker had more for it than the socket
// buffers take (its writer blocks in write holding the client's lock,
// which the disconnect needs). Both held an agent's stop for minutes in a
// CI run.
func TestBrokerCloseIsBounded(t *testing.T) {
	limit := 3*closeGrace + 5*time.Second
	t.Run("socket without CONNECT", func(t *testing.T) {
		var logs testsupport.SyncBuffer
		b, err := Start("127.0.0.1:0", slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		waitHandled(t, b, 1)
		closeWithin(t, b, limit)
		expectClosed(t, c)
		if !strings.Contains(logs.String(), "closed their sockets") {
			t.Errorf("no warning that a connection was closed by force:\n%s", logs.String())
		}
	})
	t.Run("subscriber that stopped reading", func(t *testing.T) {
		b, err := Start("127.0.0.1:0", nil)
		if err != nil {
			t.Fatal(err)
		}
		d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		}}
		c, err := d.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write(append(connectPacket, packet.AppendSubscribe(nil, 1, []string{"#"}, []byte{0})...)); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(c)
		var body []byte
		for _, want := range []byte{0x20, 0x90} { // CONNACK, SUBACK
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			h, _, err := packet.Read(r, &body, 1<<10)
			if err != nil || h&0xF0 != want {
				t.Fatalf("packet %#x, %v; want %#x", h, err, want)
			}
		}
		// 16 MiB for the subscriber, which reads no more: far beyond what
		// the sockets buffer, far below mochi-mqtt's queue of packets.
		pub := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("pub").SetAutoReconnect(false))
		if tok := pub.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
			t.Fatal("connect:", tok.Error())
		}
		payload := bytes.Repeat([]byte{'x'}, 64<<10)
		for range 256 {
			if tok := pub.Publish("flood", 0, false, payload); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
				t.Fatal("publish:", tok.Error())
			}
		}
		pub.Disconnect(0)
		closeWithin(t, b, limit)
		expectClosed(t, c)
	})
}

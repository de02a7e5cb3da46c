package broker

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// lockedBuffer is a bytes.Buffer the broker's goroutines may log into.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A clean shutdown with clients still connected (the agent's own client
// among them) logs nothing at warning level: mochi-mqtt's listener warns
// with an empty message for every connection that ends, and the server
// ending them is no problem.
func TestBrokerCloseLogsNoWarning(t *testing.T) {
	var logs lockedBuffer
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

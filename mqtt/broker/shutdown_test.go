package broker

import (
	"bytes"
	"io"
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

// A client that breaks the protocol still shows at warning level, with a
// message.
func TestBrokerWarnsOfAFailedConnection(t *testing.T) {
	var logs lockedBuffer
	b, err := Start("127.0.0.1:0", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte{0xC0, 0x00}); err != nil { // PINGREQ before CONNECT
		t.Fatal(err)
	}
	if _, err := io.ReadAll(c); err != nil { // until the broker hangs up
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, `level=WARN msg="MQTT client connection failed"`) || strings.Contains(out, `msg=""`) {
		t.Errorf("want one warning with a message, got:\n%s", out)
	}
}

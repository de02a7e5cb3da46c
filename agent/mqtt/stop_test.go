package mqtt

import (
	"bufio"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn/packet"
)

// silentBroker accepts MQTT connections on a free loopback port, answers
// CONNECT with CONNACK (unless connack is false) and then neither reads
// nor acknowledges anything: a broker that hung, or the host between that
// stopped passing data. It reports each connection it accepted on
// accepted.
func silentBroker(t *testing.T, connack bool) (url string, accepted <-chan net.Conn) {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	l, err := lc.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	ch := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
			var body []byte
			if h, _, err := packet.Read(bufio.NewReaderSize(c, 16), &body, 1<<16); err != nil || h>>4 != 1 {
				_ = c.Close()
				continue
			}
			if connack {
				_, _ = c.Write([]byte{0x20, 2, 0, 0}) // CONNACK, accepted
			}
			ch <- c
		}
	}()
	return "tcp://" + l.Addr().String(), ch
}

// Close is bounded by its grace, not by mqtt.timeout: against a broker
// that stopped acknowledging and reading, with a timeout of 30 s, the
// goodbye gives up after the grace and goodbyeAck, the connection is cut,
// and Close returns. Before, it waited grace + 2 × mqtt.timeout (62 s
// here), past the stop bound of the agent and systemd's TimeoutStopSec.
func TestCloseIsBoundedByGraceAgainstASilentBroker(t *testing.T) {
	url, accepted := silentBroker(t, true)
	p, _, _ := newTestPublisher(t, Config{Broker: url, QoS: 1, Timeout: 30 * time.Second,
		Rules: Rules{Interval: 5 * time.Millisecond}})
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher did not connect")
	}
	// The first message (status online) waits for its acknowledgement;
	// the samples pile up behind it.
	for deadline := time.Now().Add(10 * time.Second); p.Stats().Published < 1 || p.Stats().Buffered < 10; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want a message in flight and 10 buffered", p.Stats())
		}
	}
	const grace = time.Second
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.Close(grace) }()
	limit := grace + goodbyeAck + 2*time.Second + 5*time.Second // its bound, and room for a loaded host
	select {
	case <-done:
		t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(limit):
		t.Fatalf("Close has not returned after %v", limit)
	}
	if s := p.Stats(); s.Delivered != 0 || s.Buffered == 0 {
		t.Errorf("delivered %d, buffered %d: nothing was acknowledged, so everything must still be buffered", s.Delivered, s.Buffered)
	}
}

// Close cancels a connection attempt in progress: against a broker that
// takes the CONNECT and never answers, with a timeout of 30 s, Close
// returns at once instead of when the attempt times out.
func TestCloseCancelsAConnectInProgress(t *testing.T) {
	url, accepted := silentBroker(t, false)
	p, _, _ := newTestPublisher(t, Config{Broker: url, QoS: 1, Timeout: 30 * time.Second})
	select {
	case <-accepted:
	case <-time.After(10 * time.Second):
		t.Fatal("the publisher did not connect")
	}
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- p.Close(time.Second) }()
	select {
	case <-done:
		t.Logf("Close returned after %v", time.Since(start).Round(time.Millisecond))
	case <-time.After(3 * time.Second): // without the cancel: 4 s (the bound, the cut, a second more)
		t.Fatal("Close has not returned after 3s: it waited for the connection attempt")
	}
}

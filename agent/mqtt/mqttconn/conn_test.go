package mqttconn

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn/packet"
	"github.com/ecagent/ecagent/agent/mqtt/mqtttest"
)

const wait = 10 * time.Second

type msg struct{ topic, payload string }

func dial(t *testing.T, o Options) *Conn {
	t.Helper()
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	c, err := Dial(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// subscriber connects a client subscribed to filter at QoS 1.
func subscriber(t *testing.T, broker, id, filter string) (*Conn, chan msg) {
	t.Helper()
	got := make(chan msg, 1024)
	c := dial(t, Options{Broker: broker, ClientID: id, CleanSession: true, OnMessage: func(topic string, p []byte, _, _ bool) {
		got <- msg{topic, string(p)}
	}})
	if err := c.Subscribe(map[string]byte{filter: 1}); err != nil {
		t.Fatal(err)
	}
	return c, got
}

func expect(t *testing.T, got chan msg, want msg) {
	t.Helper()
	select {
	case m := <-got:
		if m != want {
			t.Fatalf("got %.80q, want %.80q", m.topic+" "+m.payload, want.topic+" "+want.payload)
		}
	case <-time.After(wait):
		t.Fatalf("no %.80q within %v", want.topic+" "+want.payload, wait)
	}
}

func TestPublishQoS0AndQoS1(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	_, got := subscriber(t, b.URL(), "sub", "t/#")
	c := dial(t, Options{Broker: b.URL(), ClientID: "pub", CleanSession: true, KeepAlive: 10 * time.Second})
	if id, err := c.Publish("t/zero", []byte("0"), 0, false); err != nil || id != 0 {
		t.Fatalf("QoS 0: id %d, %v", id, err)
	}
	expect(t, got, msg{"t/zero", "0"})
	id, err := c.Publish("t/one", []byte("1"), 1, false)
	if err != nil || id == 0 {
		t.Fatalf("QoS 1: id %d, %v", id, err)
	}
	if err := c.Wait(id, wait); err != nil {
		t.Fatal(err)
	}
	expect(t, got, msg{"t/one", "1"})
	// More QoS 1 messages than the broker has in flight to a client
	// (100): the subscriber gets them all only if it acknowledges them.
	const n = 500
	ids := make([]uint16, 0, n)
	for i := range n {
		id, err := c.Publish("t/many", fmt.Appendf(nil, "%d", i), 1, false)
		if errors.Is(err, ErrInflightFull) {
			if err := c.Wait(ids[0], wait); err != nil {
				t.Fatal(err)
			}
			ids = ids[1:]
			id, err = c.Publish("t/many", fmt.Appendf(nil, "%d", i), 1, false)
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, id := range ids {
		if err := c.Wait(id, wait); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		expect(t, got, msg{"t/many", fmt.Sprint(i)})
	}
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("after Disconnect and Close: %v", c.Err())
	}
	if _, err := c.Publish("t/x", nil, 0, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("publish after close: %v", err)
	}
}

func TestWillAndRetained(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	_, got := subscriber(t, b.URL(), "sub", "w/#")
	will := &Will{Topic: "w/status", Payload: []byte("offline"), QoS: 1, Retain: true}
	c := dial(t, Options{Broker: b.URL(), ClientID: "pub", CleanSession: true, Will: will})
	id, err := c.Publish("w/status", []byte("online"), 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(id, wait); err != nil {
		t.Fatal(err)
	}
	expect(t, got, msg{"w/status", "online"})
	_, late := subscriber(t, b.URL(), "late", "w/#")
	expect(t, late, msg{"w/status", "online"}) // retained
	c.Close()                                  // abrupt: the broker publishes the will
	expect(t, got, msg{"w/status", "offline"})

	// A clean disconnect discards the will.
	c = dial(t, Options{Broker: b.URL(), ClientID: "pub2", CleanSession: true, Will: &Will{Topic: "w/will2", Payload: []byte("x")}})
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
	c = dial(t, Options{Broker: b.URL(), ClientID: "pub3", CleanSession: true})
	if _, err := c.Publish("w/marker", []byte("m"), 0, false); err != nil {
		t.Fatal(err)
	}
	expect(t, got, msg{"w/marker", "m"})
}

func TestBrokerGoneIsReported(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	c := dial(t, Options{Broker: b.URL(), ClientID: "pub", CleanSession: true, KeepAlive: 2 * time.Second})
	b.Stop()
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatal("the loss of the broker is not reported")
	}
	if err := c.Err(); err == nil || errors.Is(err, ErrClosed) || !strings.Contains(err.Error(), "mqttconn: read from 127.0.0.1:") {
		t.Fatalf("Err() = %v", err)
	}
	if _, err := c.Publish("t", nil, 1, false); err == nil {
		t.Fatal("publish on a lost connection")
	}
	c.Close()
	c.Close()
}

func TestBadCredentials(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{Users: map[string]string{"edge": "secret"}})
	_, err := Dial(context.Background(), Options{Broker: b.URL(), ClientID: "x", CleanSession: true, Username: "edge", Password: "wrong", Timeout: wait})
	var ce *ConnectError
	if !errors.As(err, &ce) || (ce.Code != 4 && ce.Code != 5) || !strings.HasPrefix(err.Error(), "mqttconn: connect 127.0.0.1:") {
		t.Fatalf("bad password: %v", err)
	}
	c := dial(t, Options{Broker: b.URL(), ClientID: "x", CleanSession: true, Username: "edge", Password: "secret"})
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
}

// fakeBroker accepts one connection, reads the CONNECT and answers with
// reply.
func fakeBroker(t *testing.T, reply []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		buf := make([]byte, 512)
		_ = nc.SetDeadline(time.Now().Add(wait))
		if _, err := nc.Read(buf); err != nil {
			return
		}
		if reply != nil {
			_, _ = nc.Write(reply)
		}
		for { // until the client hangs up; PINGREQs are not answered
			if _, err := nc.Read(buf); err != nil {
				return
			}
		}
	}()
	return "tcp://" + l.Addr().String()
}

func TestConnackCodesAndBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		reply []byte
		want  string
	}{
		{"identifier rejected", []byte{0x20, 2, 0, 2}, "identifier rejected"},
		{"not authorized", []byte{0x20, 2, 0, 5}, "not authorized"},
		{"unknown code", []byte{0x20, 2, 0, 9}, "return code 9"},
		{"not a CONNACK", []byte{0x30, 3, 0, 1, 'a'}, "want CONNACK"},
		{"bad varint", []byte{0x20, 0xff, 0xff, 0xff, 0xff, 1}, "malformed"},
		{"no answer", nil, "no CONNACK within"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Dial(context.Background(), Options{Broker: fakeBroker(t, tc.reply), ClientID: "x", Timeout: 300 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "mqttconn: connect 127.0.0.1:") {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestMalformedInboundEndsTheConnection(t *testing.T) {
	// CONNACK, then a PUBLISH whose topic overruns its packet.
	url := fakeBroker(t, []byte{0x20, 2, 0, 0, 0x30, 3, 0, 200, 'a'})
	c := dial(t, Options{Broker: url, ClientID: "x", OnMessage: func(string, []byte, bool, bool) { t.Error("a malformed PUBLISH was delivered") }})
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatal("no error")
	}
	if err := c.Err(); !errors.Is(err, packet.ErrMalformed) {
		t.Fatalf("Err() = %v", err)
	}
}

func TestSubscribeRefused(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	c := dial(t, Options{Broker: b.URL(), ClientID: "x", CleanSession: true})
	// A filter with '#' not at its end is invalid: mosquitto hangs up or
	// refuses it; either is an error.
	if err := c.Subscribe(map[string]byte{"a/#/b": 1}); err == nil {
		t.Fatal("an invalid filter was accepted")
	}
}

// wsBridge is a WebSocket endpoint that relays binary frames to and from
// a TCP broker, written from RFC 6455 for this test; it sends a ping
// first, which the client must answer with a pong.
func wsBridge(t *testing.T, broker string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				br := bufio.NewReader(nc)
				req, err := http.ReadRequest(br)
				if err != nil || req.Header.Get("Sec-WebSocket-Protocol") != "mqtt" {
					return
				}
				sum := sha1.Sum([]byte(req.Header.Get("Sec-WebSocket-Key") + wsGUID))
				fmt.Fprintf(nc, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\nSec-WebSocket-Protocol: mqtt\r\n\r\n",
					base64.StdEncoding.EncodeToString(sum[:]))
				up, err := net.Dial("tcp", broker)
				if err != nil {
					return
				}
				defer up.Close()
				_, _ = nc.Write([]byte{0x89, 2, 'h', 'i'}) // ping
				go func() {                                // broker to client: unmasked binary frames
					buf := make([]byte, 65535)
					for {
						n, err := up.Read(buf)
						if err != nil {
							nc.Close()
							return
						}
						f := []byte{0x82}
						switch {
						case n < 126:
							f = append(f, byte(n))
						default:
							f = append(f, 126, byte(n>>8), byte(n))
						}
						if _, err := nc.Write(append(f, buf[:n]...)); err != nil {
							return
						}
					}
				}()
				for { // client to broker: masked frames
					var h [2]byte
					if _, err := io.ReadFull(br, h[:]); err != nil || h[1]&0x80 == 0 {
						return
					}
					n := uint64(h[1] & 0x7f)
					if n == 126 {
						var e [2]byte
						_, _ = io.ReadFull(br, e[:])
						n = uint64(binary.BigEndian.Uint16(e[:]))
					} else if n == 127 {
						var e [8]byte
						_, _ = io.ReadFull(br, e[:])
						n = binary.BigEndian.Uint64(e[:])
					}
					var mask [4]byte
					_, _ = io.ReadFull(br, mask[:])
					p := make([]byte, n)
					if _, err := io.ReadFull(br, p); err != nil {
						return
					}
					for i := range p {
						p[i] ^= mask[i&3]
					}
					switch h[0] & 0x0f {
					case 0x2:
						if _, err := up.Write(p); err != nil {
							return
						}
					case 0xa:
						if string(p) != "hi" {
							t.Errorf("pong %.20q", p)
						}
					default:
						return
					}
				}
			}()
		}
	}()
	return "ws://" + l.Addr().String() + "/mqtt"
}

// TestWebSocket publishes and subscribes through a WebSocket bridge.
func TestWebSocket(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	url := wsBridge(t, b.Addr())
	got := make(chan msg, 16)
	sub := dial(t, Options{Broker: url, ClientID: "wsub", CleanSession: true, OnMessage: func(topic string, p []byte, _, _ bool) { got <- msg{topic, string(p)} }})
	if err := sub.Subscribe(map[string]byte{"ws/#": 1}); err != nil {
		t.Fatal(err)
	}
	c := dial(t, Options{Broker: url, ClientID: "ws", CleanSession: true})
	big := strings.Repeat("y", 70000) // a 64-bit frame length
	for _, p := range []string{"small", big} {
		id, err := c.Publish("ws/t", []byte(p), 1, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(id, wait); err != nil {
			t.Fatal(err)
		}
		expect(t, got, msg{"ws/t", p})
	}
	if err := c.Disconnect(); err != nil {
		t.Fatal(err)
	}
}

func TestUnansweredPingEndsTheConnection(t *testing.T) {
	url := fakeBroker(t, []byte{0x20, 2, 0, 0})
	c := dial(t, Options{Broker: url, ClientID: "x", KeepAlive: time.Second, Timeout: 300 * time.Millisecond})
	select {
	case <-c.Done():
	case <-time.After(wait):
		t.Fatal("an unanswered PINGREQ is not noticed")
	}
	if err := c.Err(); err == nil || !strings.Contains(err.Error(), "no PINGRESP") {
		t.Fatalf("Err() = %v", err)
	}
}

// TestSteadyPublishAllocatesNothing: a QoS 1 publication on a real
// connection, and taking its acknowledgement, allocate nothing.
func TestSteadyPublishAllocatesNothing(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	c := dial(t, Options{Broker: b.URL(), ClientID: "pub", CleanSession: true})
	payload := []byte(`{"ts":1,"pd":"0011223344556677"}`)
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	step := func() {
		id, err := c.Publish("t/steady", payload, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		for !c.Acked(id) {
			select {
			case <-c.Acks():
			case <-c.Done():
				t.Fatal(c.Err())
			case <-timeout.C:
				t.Fatal("no PUBACK within a minute")
			}
		}
	}
	for range 10 {
		step()
	}
	if n := testing.AllocsPerRun(500, step); n != 0 {
		t.Fatalf("a QoS 1 publish and its PUBACK allocate %v times", n)
	}
}

// TestRetainFlagDelivered: OnMessage is told which messages the broker
// sends from its retained store (a new subscription matched them) and
// which are published now (issue 30: a stored command must not run).
func TestRetainFlagDelivered(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	type flagged struct {
		payload  string
		retained bool
	}
	sub := func(id string) chan flagged {
		got := make(chan flagged, 16)
		c := dial(t, Options{Broker: b.URL(), ClientID: id, CleanSession: true, OnMessage: func(_ string, p []byte, retained, _ bool) {
			got <- flagged{string(p), retained}
		}})
		if err := c.Subscribe(map[string]byte{"r/#": 1}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	expectFlagged := func(got chan flagged, want flagged) {
		t.Helper()
		select {
		case m := <-got:
			if m != want {
				t.Fatalf("got %+v, want %+v", m, want)
			}
		case <-time.After(wait):
			t.Fatalf("no %+v within %v", want, wait)
		}
	}
	early := sub("early")
	c := dial(t, Options{Broker: b.URL(), ClientID: "pub", CleanSession: true})
	id, err := c.Publish("r/x", []byte("kept"), 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(id, wait); err != nil {
		t.Fatal(err)
	}
	expectFlagged(early, flagged{"kept", false}) // published now, to an established subscription
	expectFlagged(sub("late"), flagged{"kept", true})
}

// TestClosedByBrokerIsTold: a connection the broker ends — another
// client connecting with the same client id (a session takeover), or the
// broker stopping — ends with ErrClosedByBroker; one the client closes
// does not.
func TestClosedByBrokerIsTold(t *testing.T) {
	b := mqtttest.StartMosquitto(t, mqtttest.MosquittoOptions{})
	first := dial(t, Options{Broker: b.URL(), ClientID: "same", CleanSession: true})
	second := dial(t, Options{Broker: b.URL(), ClientID: "same", CleanSession: true})
	select {
	case <-first.Done():
	case <-time.After(wait):
		t.Fatal("the broker did not end the first connection when the second took its client id")
	}
	if !errors.Is(first.Err(), ErrClosedByBroker) {
		t.Errorf("taken over: %v, want ErrClosedByBroker", first.Err())
	}
	b.Stop()
	select {
	case <-second.Done():
	case <-time.After(wait):
		t.Fatal("the broker stopped, the connection did not end")
	}
	if !errors.Is(second.Err(), ErrClosedByBroker) {
		t.Errorf("broker stopped: %v, want ErrClosedByBroker", second.Err())
	}
	b.Start()
	own := dial(t, Options{Broker: b.URL(), ClientID: "own", CleanSession: true})
	own.Close()
	if errors.Is(own.Err(), ErrClosedByBroker) {
		t.Errorf("closed by the client: %v", own.Err())
	}
}

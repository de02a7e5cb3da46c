package mqttconn

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn/packet"
)

// Will is the message the broker publishes for a client whose connection
// ends without a DISCONNECT.
type Will struct {
	Topic   string
	Payload []byte
	QoS     byte
	Retain  bool
}

// Options configure a connection.
type Options struct {
	// Broker is the broker's URL: tcp:// or mqtt:// (plain), ssl://,
	// tls:// or mqtts:// (TLS), ws:// or wss:// (WebSocket; the path is
	// the endpoint, /mqtt if empty). The default ports are 1883, 8883, 80
	// and 443.
	Broker string
	// TLS configures ssl://, tls://, mqtts:// and wss://; nil uses Go's
	// defaults. The server name defaults to the broker's host.
	TLS *tls.Config
	// ClientID is the client identifier.
	ClientID string
	// CleanSession asks the broker to start a new session.
	CleanSession bool
	// KeepAlive is the keep-alive interval (0: none). The client pings
	// after half of it without traffic.
	KeepAlive time.Duration
	// Username and Password authenticate the client (a password is sent
	// only with a user name).
	Username, Password string
	// Will, when set, is the connection's will.
	Will *Will
	// Timeout bounds connecting, every write, an answer to PINGREQ and
	// Subscribe's wait for SUBACK; 0 means 10 s.
	Timeout time.Duration
	// MaxInflight bounds the QoS 1 publications not yet acknowledged (and
	// not yet taken by Acked); 0 means 256.
	MaxInflight int
	// MaxPacket bounds the size of an inbound packet; 0 means 1 MiB.
	MaxPacket int
	// OnMessage receives inbound publications, on the connection's reader
	// goroutine, in order; it must not block. The payload is the
	// handler's to keep. retained is the PUBLISH's retain flag: set, the
	// broker sends a message it stored because a new subscription matches
	// it, not one published now (MQTT 3.1.1 §3.3.1.3); dup, its DUP flag:
	// a packet it may have delivered before (§3.3.1.1).
	OnMessage func(topic string, payload []byte, retained, dup bool)
}

// ConnectError is a CONNACK return code other than 0 (accepted).
type ConnectError struct {
	Code byte
}

// Error says what the broker refused.
func (e *ConnectError) Error() string {
	switch e.Code {
	case 1:
		return "connection refused: unacceptable protocol version"
	case 2:
		return "connection refused: identifier rejected"
	case 3:
		return "connection refused: server unavailable"
	case 4:
		return "connection refused: bad user name or password"
	case 5:
		return "connection refused: not authorized"
	}
	return fmt.Sprintf("connection refused: return code %d", e.Code)
}

// ErrClosed is the error of a connection closed by Close or Disconnect.
var ErrClosed = errors.New("mqttconn: connection closed")

// ErrClosedByBroker is wrapped by the error of a connection the broker
// ended: it closed the socket, or sent DISCONNECT (as MQTT 5 brokers do,
// and some to MQTT 3.1.1 clients too). A broker does so when it stops,
// and when another client connects with the same client identifier (the
// session is taken over, MQTT 3.1.1 §3.1.4).
var ErrClosedByBroker = errors.New("the broker closed the connection")

// ErrInflightFull is returned by Publish at QoS 1 when MaxInflight
// publications are not yet acknowledged or not yet taken by Acked.
var ErrInflightFull = errors.New("mqttconn: too many publications in flight")

// idState is what a packet identifier is used for.
type idState uint8

const (
	idFree      idState = iota
	idInflight          // a QoS 1 PUBLISH waiting for its PUBACK
	idAcked             // acknowledged, until Acked takes it
	idSubscribe         // a SUBSCRIBE waiting for its SUBACK
)

// suback is a SUBACK for the goroutine waiting in Subscribe.
type suback struct {
	id    uint16
	codes []byte
}

// Conn is one MQTT connection. Its methods are safe for concurrent use.
type Conn struct {
	addr      string // host:port, for errors
	conn      net.Conn
	br        *bufio.Reader
	timeout   time.Duration
	keepAlive time.Duration
	maxPacket int
	onMessage func(string, []byte, bool, bool)

	wmu       sync.Mutex
	wbuf      []byte
	lastWrite atomic.Int64 // Unix ns
	lastRead  atomic.Int64 // Unix ns
	pingSent  atomic.Int64 // Unix ns of the PINGREQ unanswered, 0 if none

	imu         sync.Mutex
	ids         [65536]idState
	next        uint16 // the last id given out
	used        int    // ids not free
	maxInflight int

	acks    chan struct{}
	subMu   sync.Mutex
	subacks chan suback

	done    chan struct{}
	closing atomic.Bool // Disconnect began: what breaks now is ErrClosed
	errOnce sync.Once
	err     error
	readers sync.WaitGroup
}

// Dial connects to the broker, sends CONNECT and waits for CONNACK, all
// within o.Timeout and ctx. It starts the reader and keep-alive
// goroutines; the connection ends with Disconnect, Close or a failure
// (Done).
func Dial(ctx context.Context, o Options) (*Conn, error) {
	ka, err := o.normalize()
	if err != nil {
		return nil, err
	}
	b, err := parseBroker(o.Broker)
	if err != nil {
		return nil, err
	}
	wrap := func(err error) error { return fmt.Errorf("mqttconn: connect %s: %w", b.addr, err) }

	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	nc, err := b.dial(ctx, o.TLS)
	if err != nil {
		return nil, wrap(err)
	}
	// Every read and write of the handshake ends with ctx: at its
	// deadline, or at once when it is cancelled.
	deadline, _ := ctx.Deadline()
	_ = nc.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	nc, br, err := b.upgrade(nc)
	if err != nil {
		return nil, wrap(err)
	}
	c := &Conn{
		addr: b.addr, conn: nc, br: br, timeout: o.Timeout, keepAlive: time.Duration(ka) * time.Second,
		maxPacket: o.MaxPacket, onMessage: o.OnMessage, maxInflight: o.MaxInflight,
		wbuf: make([]byte, 0, 1024), acks: make(chan struct{}, 1), subacks: make(chan suback, 1),
		done: make(chan struct{}),
	}
	c.wbuf = appendConnect(c.wbuf[:0], &o, ka)
	if _, err := nc.Write(c.wbuf); err != nil {
		nc.Close()
		return nil, wrap(err)
	}
	rbuf, err := c.readConnack()
	if err != nil {
		nc.Close()
		if (ctx.Err() != nil || errors.Is(err, os.ErrDeadlineExceeded)) && !errors.As(err, new(*ConnectError)) {
			err = fmt.Errorf("no CONNACK within %v: %w", o.Timeout, err)
		}
		return nil, wrap(err)
	}
	if !stop() {
		nc.Close()
		return nil, wrap(fmt.Errorf("no CONNACK within %v", o.Timeout))
	}
	_ = nc.SetDeadline(time.Time{})
	c.start(rbuf)
	return c, nil
}

// normalize fills in the defaults of o and checks what the broker could
// not take; it returns the keep-alive in seconds, as CONNECT carries it.
func (o *Options) normalize() (keepAlive uint16, err error) {
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	if o.MaxInflight <= 0 {
		o.MaxInflight = 256
	}
	o.MaxInflight = min(o.MaxInflight, 65535)
	if o.MaxPacket <= 0 {
		o.MaxPacket = 1 << 20
	}
	o.MaxPacket = min(o.MaxPacket, packet.MaxRemaining)
	ka := o.KeepAlive.Round(time.Second) / time.Second
	if ka > 65535 || ka < 0 {
		return 0, fmt.Errorf("mqttconn: keep-alive %v out of range", o.KeepAlive)
	}
	if o.KeepAlive > 0 && ka == 0 {
		ka = 1
	}
	if o.Will != nil && o.Will.QoS > 1 {
		return 0, fmt.Errorf("mqttconn: will QoS %d, want 0 or 1", o.Will.QoS)
	}
	return uint16(ka), nil
}

// broker is where a connection goes: the broker's URL, its scheme in
// lower case and its address (host:port).
type broker struct {
	url    *url.URL
	scheme string
	addr   string
}

// defaultPort returns the port of a scheme a broker URL may have, and
// false for any other scheme.
func defaultPort(scheme string) (string, bool) {
	switch scheme {
	case "tcp", "mqtt":
		return "1883", true
	case "ssl", "tls", "mqtts":
		return "8883", true
	case "ws":
		return "80", true
	case "wss":
		return "443", true
	}
	return "", false
}

// parseBroker reads a broker URL (see Options.Broker).
func parseBroker(raw string) (broker, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return broker{}, fmt.Errorf("mqttconn: broker URL: %w", err)
	}
	scheme := strings.ToLower(u.Scheme)
	port, ok := defaultPort(scheme)
	if !ok {
		return broker{}, fmt.Errorf("mqttconn: broker URL %q: unknown scheme %q", raw, u.Scheme)
	}
	if u.Port() != "" {
		port = u.Port()
	}
	return broker{url: u, scheme: scheme, addr: net.JoinHostPort(u.Hostname(), port)}, nil
}

// secure reports whether the scheme runs over TLS.
func (b broker) secure() bool {
	switch b.scheme {
	case "ssl", "tls", "mqtts", "wss":
		return true
	}
	return false
}

// dial opens the TCP connection, with TLS (cfg, nil for Go's defaults)
// when the scheme asks for it.
func (b broker) dial(ctx context.Context, cfg *tls.Config) (net.Conn, error) {
	nd := &net.Dialer{}
	if !b.secure() {
		return nd.DialContext(ctx, "tcp", b.addr)
	}
	if cfg == nil {
		cfg = &tls.Config{}
	}
	return (&tls.Dialer{NetDialer: nd, Config: cfg}).DialContext(ctx, "tcp", b.addr)
}

// upgrade returns the stream MQTT runs on over nc, with its reader: nc
// itself, or a WebSocket for ws:// and wss:// (the URL's path is the
// endpoint, /mqtt if empty). It closes nc when the upgrade fails.
func (b broker) upgrade(nc net.Conn) (net.Conn, *bufio.Reader, error) {
	br := bufio.NewReaderSize(nc, 4096)
	if b.scheme != "ws" && b.scheme != "wss" {
		return nc, br, nil
	}
	path := b.url.EscapedPath()
	if path == "" {
		path = "/mqtt"
	}
	if b.url.RawQuery != "" {
		path += "?" + b.url.RawQuery
	}
	ws, err := dialWebSocket(nc, br, b.url.Host, path)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return ws, bufio.NewReaderSize(ws, 4096), nil
}

// readConnack reads the answer to CONNECT; it returns the read buffer,
// for the reader goroutine, and an error when the broker did not accept
// the connection (a *ConnectError when it said why).
func (c *Conn) readConnack() ([]byte, error) {
	var rbuf []byte
	h, body, err := packet.Read(c.br, &rbuf, 16)
	if err != nil {
		return nil, err
	}
	if h>>4 != packet.TypeConnack {
		return nil, packet.Malformed("first packet of type %d, want CONNACK", h>>4)
	}
	_, code, err := packet.ParseConnack(body)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, &ConnectError{Code: code}
	}
	return rbuf, nil
}

// start starts the reader goroutine, with what the handshake read ahead
// in rbuf, and the keep-alive goroutine when the connection has one.
func (c *Conn) start(rbuf []byte) {
	now := time.Now().UnixNano()
	c.lastWrite.Store(now)
	c.lastRead.Store(now)
	c.readers.Add(1)
	go c.readLoop(rbuf)
	if c.keepAlive > 0 {
		c.readers.Add(1)
		go c.pinger()
	}
}

// Done is closed when the connection has ended (Err says why).
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended: ErrClosed after Close or Disconnect,
// the failure otherwise; nil while it is up.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// fail ends the connection with err, once; later calls do nothing.
func (c *Conn) fail(err error) {
	c.errOnce.Do(func() {
		if c.closing.Load() {
			err = ErrClosed
		}
		c.err = err
		close(c.done)
		_ = c.conn.Close()
	})
}

// write sends the packet that fill appends to the (reused) write buffer.
func (c *Conn) write(what string, fill func(b []byte) []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeLocked(what, fill(c.wbuf[:0]))
}

func (c *Conn) writeLocked(what string, b []byte) error {
	c.wbuf = b[:0]
	if err := c.Err(); err != nil {
		return err
	}
	now := time.Now()
	_ = c.conn.SetWriteDeadline(now.Add(c.timeout))
	if _, err := c.conn.Write(b); err != nil {
		err = fmt.Errorf("mqttconn: %s to %s: %w", what, c.addr, err)
		c.fail(err)
		return err
	}
	c.lastWrite.Store(now.UnixNano())
	return nil
}

// takeID reserves a free packet identifier for s: the next after the last
// one given out, wrapping from 65535 to 1 and skipping those in use.
func (c *Conn) takeID(s idState, limit int) (uint16, bool) {
	c.imu.Lock()
	defer c.imu.Unlock()
	if c.used >= limit {
		return 0, false
	}
	id := c.next
	for {
		id++
		if id == 0 {
			id = 1
		}
		if c.ids[id] == idFree {
			break
		}
	}
	c.next, c.ids[id] = id, s
	c.used++
	return id, true
}

func (c *Conn) freeID(id uint16) {
	c.imu.Lock()
	if c.ids[id] != idFree {
		c.ids[id] = idFree
		c.used--
	}
	c.imu.Unlock()
}

// Publish sends a publication at QoS 0 or 1. At QoS 1 it returns the
// packet identifier, which Acked reports once the broker acknowledged it;
// at QoS 0 it returns 0 (nothing to wait for: the publication was
// written). It does not wait for the acknowledgement; payload may be
// reused as soon as it returns.
func (c *Conn) Publish(topic string, payload []byte, qos byte, retain bool) (uint16, error) {
	if qos > 1 {
		return 0, fmt.Errorf("mqttconn: publish to %s: QoS %d not supported", topic, qos)
	}
	if topic == "" || len(topic) > 65535 || strings.ContainsAny(topic, "+#") {
		return 0, fmt.Errorf("mqttconn: publish: invalid topic %q", topic)
	}
	if n := 2 + len(topic) + 2 + len(payload); n > packet.MaxRemaining {
		return 0, fmt.Errorf("mqttconn: publish to %s: packet of %d bytes", topic, n)
	}
	if err := c.Err(); err != nil {
		return 0, err
	}
	var id uint16
	if qos == 1 {
		var ok bool
		if id, ok = c.takeID(idInflight, c.maxInflight); !ok {
			return 0, ErrInflightFull
		}
	}
	c.wmu.Lock()
	err := c.writeLocked("publish", packet.AppendPublish(c.wbuf[:0], topic, payload, qos, retain, id))
	c.wmu.Unlock()
	if err != nil {
		return 0, err
	}
	return id, nil
}

// Acks receives a signal (coalesced) after PUBACKs arrived: the time to
// call Acked for the identifiers waited for.
func (c *Conn) Acks() <-chan struct{} { return c.acks }

// Acked reports whether the publication with packet identifier id was
// acknowledged; if so, it frees the identifier, so it reports true once.
// Identifier 0 (QoS 0) is always acknowledged.
func (c *Conn) Acked(id uint16) bool {
	if id == 0 {
		return true
	}
	c.imu.Lock()
	defer c.imu.Unlock()
	if c.ids[id] != idAcked {
		return false
	}
	c.ids[id] = idFree
	c.used--
	return true
}

// Wait waits, for up to timeout, until the publication with packet
// identifier id is acknowledged (and takes it, as Acked). It consumes
// signals of Acks.
func (c *Conn) Wait(id uint16, timeout time.Duration) error {
	if c.Acked(id) {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-c.acks:
			if c.Acked(id) {
				return nil
			}
		case <-c.done:
			if c.Acked(id) {
				return nil
			}
			return c.err
		case <-t.C:
			return fmt.Errorf("mqttconn: no PUBACK from %s within %v", c.addr, timeout)
		}
	}
}

// Subscribe subscribes to the topic filters of subs at their QoS (0 or
// 1) and waits, within the timeout, for the SUBACK. A filter the broker
// refuses (return code 0x80) is an error naming it.
func (c *Conn) Subscribe(subs map[string]byte) error {
	if len(subs) == 0 {
		return nil
	}
	topics := make([]string, 0, len(subs))
	for t, q := range subs {
		if t == "" || q > 1 {
			return fmt.Errorf("mqttconn: subscribe to %q at QoS %d: not supported", t, q)
		}
		topics = append(topics, t)
	}
	slices.Sort(topics)
	qos := make([]byte, len(topics))
	for i, t := range topics {
		qos[i] = subs[t]
	}
	c.subMu.Lock()
	defer c.subMu.Unlock()
	id, ok := c.takeID(idSubscribe, 65535)
	if !ok {
		return errors.New("mqttconn: subscribe: no free packet identifier")
	}
	defer c.freeID(id)
	if err := c.write("subscribe", func(b []byte) []byte { return packet.AppendSubscribe(b, id, topics, qos) }); err != nil {
		return err
	}
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	for {
		select {
		case a := <-c.subacks:
			if a.id != id {
				continue // the answer to an earlier Subscribe that gave up
			}
			if len(a.codes) != len(topics) {
				return fmt.Errorf("mqttconn: subscribe: SUBACK with %d return codes for %d filters", len(a.codes), len(topics))
			}
			var refused []string
			for i, code := range a.codes {
				if code&0x80 != 0 {
					refused = append(refused, topics[i])
				}
			}
			if len(refused) > 0 {
				return fmt.Errorf("mqttconn: subscribe: the broker refused %s", strings.Join(refused, ", "))
			}
			return nil
		case <-c.done:
			return c.err
		case <-t.C:
			return fmt.Errorf("mqttconn: subscribe: no SUBACK from %s within %v", c.addr, c.timeout)
		}
	}
}

// Disconnect sends DISCONNECT (so that the broker discards the will) and
// closes the connection. It does not wait for publications in flight.
func (c *Conn) Disconnect() error {
	c.closing.Store(true)
	err := c.write("disconnect", func(b []byte) []byte { return append(b, packet.TypeDisconnect<<4, 0) })
	c.Close()
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// Close closes the connection without DISCONNECT (the broker publishes the
// will) and waits for its goroutines, so it must not be called from
// OnMessage. Closing twice is safe.
func (c *Conn) Close() {
	c.fail(ErrClosed)
	c.readers.Wait()
}

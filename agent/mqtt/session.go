package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn"
	"github.com/ecagent/ecagent/agent/mqtt/sparkplug"
)

// maxInflight bounds the messages sent but not yet acknowledged.
const maxInflight = 256

// keepAlive is the MQTT keep-alive: a broker that stops answering is
// noticed within about twice this.
const keepAlive = 10 * time.Second

// errClosing ends a session because Close was called.
var errClosing = errors.New("mqtt: closing")

// flight is a message handed to the client, until it is acknowledged:
// id is its packet identifier (0 at QoS 0: nothing to wait for).
type flight struct {
	m    message
	id   uint16
	sent time.Time
}

// MaxReconnect caps the reconnect back-off, whatever Config.ReconnectMax
// says: an attempt on a broker that is down costs a refused connection,
// and a longer wait makes the agent come back long after the broker does
// (after a 30 s outage, 21 s after it with a 30 s cap).
const MaxReconnect = 2 * time.Second

// reconnectWait returns how long to wait before the next attempt: a random
// duration between half of backoff and backoff ("equal jitter"), so that
// many agents do not come back at the same instant.
func reconnectWait(backoff time.Duration) time.Duration {
	half := backoff / 2
	return half + rand.N(backoff-half+1)
}

// session is the connection to the broker: it connects, announces,
// subscribes and sends what the outbox holds, and reconnects when the
// connection breaks. Its goroutine (run) owns the connection and what the
// renderer keeps per connection; the others read its counters and state,
// which are atomic.
type session struct {
	cfg       *Config
	log       *slog.Logger
	r         Renderer
	out       *outbox
	sampler   *sampler   // the bus to announce, births to render
	seq       *sequencer // the takeover event
	bdSeq     *bdSeqStore
	onMessage func(topic string, payload []byte, retained, dup bool)
	closing   <-chan struct{}

	conn                                        atomic.Pointer[mqttconn.Conn] // the connection being served, or nil
	connected, rebirth                          atomic.Bool
	published, delivered, reconnects, takeovers atomic.Uint64

	wake        chan struct{} // wakes the session for a rebirth
	grace       time.Duration // set by Close before closing: how long goodbye may flush
	sessionDone chan struct{}
	// pm is the message Prepare readies: the session's, so that passing
	// it to the renderer moves nothing to the heap.
	pm Message
}

// requestRebirth makes the session announce again (Sparkplug's rebirth).
func (s *session) requestRebirth() {
	s.rebirth.Store(true)
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run connects, serves the connection until it breaks, and reconnects
// with exponential back-off (jittered, capped at MaxReconnect), until
// Close. A session taken over again and again backs off for longer
// (takeover.go).
func (s *session) run() {
	defer close(s.sessionDone)
	backoff := s.cfg.ReconnectMin
	first, wasUp := true, false
	var tk takeoverWatch
	for {
		select {
		case <-s.closing:
			return
		default:
		}
		c, err := s.connect()
		if err != nil {
			select {
			case <-s.closing: // the dial was cancelled by Close
				return
			default:
			}
			s.out.setLogging(true)
			if wasUp || first {
				s.log.Warn("mqtt: cannot reach the broker; buffering", "broker", s.cfg.Broker, "err", err,
					"retry_in", backoff, "buffered", s.out.Len())
			} else {
				s.log.Debug("mqtt: still cannot reach the broker", "err", err, "buffered", s.out.Len())
			}
			first, wasUp = false, false
			tk.reset()
			if !s.sleep(reconnectWait(backoff)) {
				return
			}
			backoff = min(2*backoff, s.cfg.ReconnectMax)
			continue
		}
		if !first {
			s.reconnects.Add(1)
		}
		first, wasUp = false, true
		backoff = s.cfg.ReconnectMin
		if !s.live(c, &tk) {
			return
		}
	}
}

// live serves the connection c until it breaks, and waits out a takeover
// back-off; false when Close ended it.
func (s *session) live(c *mqttconn.Conn, tk *takeoverWatch) bool {
	s.connected.Store(true)
	s.out.setLogging(false)
	s.log.Info("mqtt: connected", "broker", s.cfg.Broker, "client_id", s.cfg.ClientID, "buffered", s.out.Len())
	s.conn.Store(c)
	up := time.Now()
	err := s.serve(c)
	s.conn.Store(nil)
	s.connected.Store(false)
	if errors.Is(err, errClosing) {
		return false
	}
	s.out.setLogging(true) // what is queued now, the messages in flight included
	s.log.Warn("mqtt: connection lost", "err", err, "buffered", s.out.Len())
	if wait, ok := tk.ended(err, time.Since(up), s.cfg.TakeoverBackoff); ok {
		s.takenOver(tk, wait)
		return s.sleep(wait)
	}
	return true
}

// sleep waits d; false when Close came first.
func (s *session) sleep(d time.Duration) bool {
	select {
	case <-s.closing:
		return false
	case <-time.After(d):
		return true
	}
}

// connect opens one connection, with the renderer's will for a new bdSeq
// (status offline, or NDEATH).
func (s *session) connect() (*mqttconn.Conn, error) {
	bdSeq, err := s.bdSeq.next()
	if err != nil {
		s.log.Warn("mqtt: the bdSeq is not kept for the next run", "err", err)
	}
	will := s.r.Will(bdSeq)
	// Close must not wait for a dial to a broker that does not answer:
	// closing cancels it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return mqttconn.Dial(ctx, mqttconn.Options{
		Broker:       s.cfg.Broker,
		TLS:          s.cfg.TLS,
		ClientID:     s.cfg.ClientID,
		CleanSession: true, // Sparkplug requires it; the outbox does the buffering
		KeepAlive:    keepAlive,
		Username:     s.cfg.Username,
		Password:     s.cfg.Password,
		Will:         &mqttconn.Will{Topic: will.Topic, Payload: will.Payload, QoS: will.QoS, Retain: will.Retain},
		Timeout:      s.cfg.Timeout,
		MaxInflight:  maxInflight,
		OnMessage:    s.onMessage,
	})
}

// flights is the FIFO of messages in flight, a fixed ring so that the
// steady flow allocates nothing.
type flights struct {
	buf  [maxInflight]flight
	head int
	n    int
}

func (f *flights) len() int       { return f.n }
func (f *flights) front() *flight { return &f.buf[f.head] }
func (f *flights) push(x flight)  { f.buf[(f.head+f.n)%maxInflight] = x; f.n++ }
func (f *flights) popFront() {
	f.buf[f.head] = flight{}
	f.head = (f.head + 1) % maxInflight
	f.n--
}

// messages returns the messages in flight, oldest first.
func (f *flights) messages() []message {
	ms := make([]message, f.n)
	for i := range ms {
		ms[i] = f.buf[(f.head+i)%maxInflight].m
	}
	return ms
}

// serve announces the node on c, subscribes to commands, and pumps the
// outbox until the connection breaks (or Close). Messages still in flight
// then go back to the front of the outbox.
func (s *session) serve(c *mqttconn.Conn) (err error) {
	inflight := new(flights)
	seq := uint64(0)
	defer func() {
		if errors.Is(err, errClosing) {
			s.goodbye(c, inflight, &seq)
			return
		}
		_ = c.Disconnect()
		s.out.requeue(inflight.messages())
	}()
	// born is when the connection's (or the last rebirth's) births were
	// made: what was made before it is older than what they say.
	born := time.Now().UnixNano()
	if err := s.announce(c, &seq); err != nil {
		return err
	}
	if err := s.subscribe(c); err != nil {
		return err
	}
	timer := time.NewTimer(s.cfg.Timeout)
	defer timer.Stop()
	for {
		if s.rebirth.Swap(false) {
			if err := s.flushInflight(c, inflight, time.Time{}); err != nil {
				return err
			}
			born = time.Now().UnixNano()
			if err := s.announce(c, &seq); err != nil {
				return err
			}
		}
		if err := s.fill(c, inflight, &seq, born); err != nil {
			return err
		}
		if s.popAcked(c, inflight) {
			// Acknowledged while the last batch was sent: send more
			// before waiting, unless told to stop.
			select {
			case <-s.closing:
				return errClosing
			case <-c.Done():
				return fmt.Errorf("connection lost: %w", c.Err())
			default:
			}
			continue
		}
		var acks <-chan struct{}
		if inflight.len() > 0 {
			acks = c.Acks()
			timer.Reset(time.Until(inflight.front().sent.Add(s.cfg.Timeout)))
		}
		select {
		case <-s.closing:
			return errClosing
		case <-c.Done():
			return fmt.Errorf("connection lost: %w", c.Err())
		case <-s.out.ready:
		case <-s.wake:
		case <-acks:
			s.popAcked(c, inflight)
		case <-timer.C:
			if inflight.len() > 0 && time.Since(inflight.front().sent) >= s.cfg.Timeout {
				return fmt.Errorf("no acknowledgement within %v", s.cfg.Timeout)
			}
		}
	}
}

// fill sends what the outbox holds until maxInflight messages are in
// flight; a message made before born (the births of this connection) is
// marked historical first.
func (s *session) fill(c *mqttconn.Conn, inflight *flights, seq *uint64, born int64) error {
	for inflight.len() < maxInflight {
		m, ok := s.out.pop()
		if !ok {
			return nil
		}
		if !s.prepare(&m) {
			s.out.finish(m)
			continue
		}
		if m.made < born {
			s.markHistorical(&m)
		}
		id, err := s.send(c, m, seq)
		inflight.push(flight{m: m, id: id, sent: time.Now()})
		if err != nil {
			return fmt.Errorf("publish to %s: %w", m.topic, err)
		}
	}
	return nil
}

// popAcked takes the acknowledged messages off the front of inflight,
// and says whether there were any.
func (s *session) popAcked(c *mqttconn.Conn, inflight *flights) bool {
	popped := false
	for inflight.len() > 0 && c.Acked(inflight.front().id) {
		s.delivered.Add(1)
		s.out.finish(inflight.front().m)
		inflight.popFront()
		popped = true
	}
	return popped
}

// markHistorical marks the metrics of a Sparkplug data message made
// before the births its connection sent: sent after them as current, its
// older values would take their place at the host (a value going back in
// time). The messages made while the agent knew it was offline carry the
// mark already; these were made while it did not know yet (the
// connection broken, not yet noticed), or sent on the broken connection
// and not acknowledged.
func (s *session) markHistorical(m *message) {
	if !m.sparkplug || m.kind == KindBirth || m.kind == KindDeath || len(m.payload) == 0 {
		return
	}
	h, err := sparkplug.MarkHistorical(m.payload)
	if err != nil {
		s.log.Warn("mqtt: a buffered Sparkplug message could not be marked historical; sent as it is", "topic", m.topic, "err", err)
		return
	}
	s.out.recycle(m.payload)
	m.payload = h
}

// send hands m to the client; a Sparkplug message gets the next seq. It
// returns the packet identifier to wait for (0 at QoS 0).
func (s *session) send(c *mqttconn.Conn, m message, seq *uint64) (uint16, error) {
	payload := m.payload
	if m.sparkplug {
		payload = sparkplug.AppendSeq(payload, *seq)
		*seq = (*seq + 1) % 256
	}
	s.published.Add(1)
	return c.Publish(m.topic, payload, m.qos, m.retain)
}

// waitAck waits until the publication with packet identifier id is
// acknowledged, until deadline.
func (s *session) waitAck(c *mqttconn.Conn, topic string, id uint16, deadline time.Time) error {
	if err := c.Wait(id, time.Until(deadline)); err != nil {
		if c.Err() == nil {
			return fmt.Errorf("publish to %s: no acknowledgement within %v", topic, s.cfg.Timeout)
		}
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	s.delivered.Add(1)
	return nil
}

// flushInflight waits (bounded) until every message in flight is
// acknowledged, so that births follow the data sent before them.
func (s *session) flushInflight(c *mqttconn.Conn, inflight *flights, limit time.Time) error {
	for inflight.len() > 0 {
		f := inflight.front()
		if err := s.waitAck(c, f.m.topic, f.id, earliest(f.sent.Add(s.cfg.Timeout), limit)); err != nil {
			return err
		}
		s.out.finish(f.m)
		inflight.popFront()
	}
	return nil
}

// publishNow publishes one message directly (not through the outbox) and
// waits, bounded, for its acknowledgement.
func (s *session) publishNow(c *mqttconn.Conn, topic string, qos byte, retain bool, payload []byte, limit time.Time) error {
	id, err := c.Publish(topic, payload, qos, retain)
	s.published.Add(1)
	if err != nil {
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	return s.waitAck(c, topic, id, earliest(time.Now().Add(s.cfg.Timeout), limit))
}

// earliest returns the earlier of a and limit; a zero limit is none.
func earliest(a, limit time.Time) time.Time {
	if !limit.IsZero() && limit.Before(a) {
		return limit
	}
	return a
}

// prepare readies m for this connection (Renderer.Prepare): a birth with
// the view of its device now, under the sampler's lock. It reports false
// for a message not to send.
func (s *session) prepare(m *message) bool {
	m.exported(&s.pm)
	var ok bool
	if m.kind == KindBirth {
		ok = s.sampler.prepareBirth(s.r, &s.pm)
	} else {
		ok = s.r.Prepare(&s.pm, nil)
	}
	m.payload, s.pm = s.pm.Payload, Message{}
	return ok
}

// announce publishes what a new connection (or a rebirth) starts with —
// the renderer says what: status and meta (JSON), NBIRTH and the DBIRTHs
// (Sparkplug) — with seq from 0 for the messages that carry one.
func (s *session) announce(c *mqttconn.Conn, seq *uint64) error {
	ms := s.sampler.announce(s.r, s.bdSeq.current())
	*seq = 0
	for _, m := range ms {
		if m.Sparkplug {
			m.Payload = sparkplug.AppendSeq(m.Payload, *seq)
			*seq = (*seq + 1) % 256
		}
		if err := s.publishNow(c, m.Topic, m.QoS, m.Retain, m.Payload, time.Time{}); err != nil {
			return err
		}
	}
	return nil
}

// subscribe subscribes to the renderer's topics: its command topics
// (writes always, so that refused writes are answered) and, apart, the
// optional ones, whose refusal is logged, not fatal. The connection hands
// what arrives to onMessage.
func (s *session) subscribe(c *mqttconn.Conn) error {
	required, optional := map[string]byte{}, map[string]byte{}
	for _, sub := range s.r.Subscriptions() {
		if sub.Optional {
			optional[sub.Filter] = sub.QoS
		} else {
			required[sub.Filter] = sub.QoS
		}
	}
	if err := c.Subscribe(required); err != nil {
		return err
	}
	if len(optional) > 0 {
		if err := c.Subscribe(optional); err != nil {
			s.log.Warn("mqtt: a subscription the scheme can do without was refused", "err", err)
		}
	}
	return nil
}

// goodbye ends a connection on Close: it tries to deliver what is
// buffered (for up to Close's grace), then publishes status offline or
// NDEATH, which a graceful disconnect does not make the broker send.
// What could not be delivered stays in the outbox.
func (s *session) goodbye(c *mqttconn.Conn, inflight *flights, seq *uint64) {
	deadline := time.Now().Add(s.grace)
	err := s.flushInflight(c, inflight, deadline)
	for err == nil && time.Now().Before(deadline) {
		m, ok := s.out.pop()
		if !ok {
			break
		}
		if !s.prepare(&m) {
			s.out.finish(m)
			continue
		}
		id, perr := s.send(c, m, seq)
		inflight.push(flight{m: m, id: id, sent: time.Now()})
		if err = perr; err == nil {
			err = s.flushInflight(c, inflight, deadline)
		}
	}
	s.out.requeue(inflight.messages())
	if err == nil {
		m := s.r.Goodbye(s.bdSeq.current())
		_ = s.publishNow(c, m.Topic, m.QoS, m.Retain, m.Payload, time.Now().Add(goodbyeAck))
	}
	_ = c.Disconnect()
}

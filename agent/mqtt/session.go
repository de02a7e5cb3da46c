package mqtt

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// runSession connects, serves the connection until it breaks, and
// reconnects with exponential back-off (jittered, capped at MaxReconnect),
// until Close. A session taken over again and again backs off for longer
// (takeover.go).
func (p *Publisher) runSession() {
	defer close(p.sessionDone)
	backoff := p.cfg.ReconnectMin
	first, wasUp := true, false
	var tk takeoverWatch
	for {
		select {
		case <-p.closing:
			return
		default:
		}
		c, err := p.connect()
		if err != nil {
			select {
			case <-p.closing: // the dial was cancelled by Close
				return
			default:
			}
			p.out.setLogging(true)
			if wasUp || first {
				p.log.Warn("mqtt: cannot reach the broker; buffering", "broker", p.cfg.Broker, "err", err,
					"retry_in", backoff, "buffered", p.out.Len())
			} else {
				p.log.Debug("mqtt: still cannot reach the broker", "err", err, "buffered", p.out.Len())
			}
			first, wasUp = false, false
			tk.reset()
			select {
			case <-p.closing:
				return
			case <-time.After(reconnectWait(backoff)):
			}
			backoff = min(2*backoff, p.cfg.ReconnectMax)
			continue
		}
		if !first {
			p.reconnects.Add(1)
		}
		first, wasUp = false, true
		backoff = p.cfg.ReconnectMin
		p.connected.Store(true)
		p.out.setLogging(false)
		p.log.Info("mqtt: connected", "broker", p.cfg.Broker, "client_id", p.cfg.ClientID, "buffered", p.out.Len())
		p.conn.Store(c)
		up := time.Now()
		err = p.serve(c)
		p.conn.Store(nil)
		p.connected.Store(false)
		if errors.Is(err, errClosing) {
			return
		}
		p.out.setLogging(true) // what is queued now, the messages in flight included
		p.log.Warn("mqtt: connection lost", "err", err, "buffered", p.out.Len())
		if wait, ok := tk.ended(err, time.Since(up), p.cfg.TakeoverBackoff); ok {
			p.takenOver(&tk, wait)
			select {
			case <-p.closing:
				return
			case <-time.After(wait):
			}
		}
	}
}

// connect opens one connection, with the will of this connection: status
// offline (JSON) or NDEATH with a new bdSeq (Sparkplug).
func (p *Publisher) connect() (*mqttconn.Conn, error) {
	bdSeq, err := p.bdSeq.next()
	if err != nil {
		p.log.Warn("mqtt: the bdSeq is not kept for the next run", "err", err)
	}
	will := p.sch.will(bdSeq)
	// Close must not wait for a dial to a broker that does not answer:
	// closing cancels it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-p.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	return mqttconn.Dial(ctx, mqttconn.Options{
		Broker:       p.cfg.Broker,
		TLS:          p.cfg.TLS,
		ClientID:     p.cfg.ClientID,
		CleanSession: true, // Sparkplug requires it; the outbox does the buffering
		KeepAlive:    keepAlive,
		Username:     p.cfg.Username,
		Password:     p.cfg.Password,
		Will:         &mqttconn.Will{Topic: will.topic, Payload: will.payload, QoS: will.qos, Retain: will.retain},
		Timeout:      p.cfg.Timeout,
		MaxInflight:  maxInflight,
		OnMessage:    p.message,
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
func (p *Publisher) serve(c *mqttconn.Conn) (err error) {
	inflight := new(flights)
	seq := uint64(0)
	defer func() {
		if errors.Is(err, errClosing) {
			p.goodbye(c, inflight, &seq)
			return
		}
		_ = c.Disconnect()
		p.out.requeue(inflight.messages())
	}()
	if err := p.announce(c, &seq); err != nil {
		return err
	}
	if err := p.subscribe(c); err != nil {
		return err
	}
	timer := time.NewTimer(p.cfg.Timeout)
	defer timer.Stop()
	// m is taken out of the loop: prepare(&m), an interface call, moves
	// it to the heap, once per connection rather than once per message.
	var m message
	for {
		if p.rebirth.Swap(false) {
			if err := p.flushInflight(c, inflight, time.Time{}); err != nil {
				return err
			}
			if err := p.announce(c, &seq); err != nil {
				return err
			}
		}
		for inflight.len() < maxInflight {
			var ok bool
			if m, ok = p.out.pop(); !ok {
				break
			}
			if !p.sch.prepare(&m) {
				p.out.finish(m)
				continue
			}
			id, err := p.send(c, m, &seq)
			inflight.push(flight{m: m, id: id, sent: time.Now()})
			if err != nil {
				return fmt.Errorf("publish to %s: %w", m.topic, err)
			}
		}
		if p.popAcked(c, inflight) {
			// Acknowledged while the last batch was sent: send more
			// before waiting, unless told to stop.
			select {
			case <-p.closing:
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
			timer.Reset(time.Until(inflight.front().sent.Add(p.cfg.Timeout)))
		}
		select {
		case <-p.closing:
			return errClosing
		case <-c.Done():
			return fmt.Errorf("connection lost: %w", c.Err())
		case <-p.out.ready:
		case <-p.wake:
		case <-acks:
			p.popAcked(c, inflight)
		case <-timer.C:
			if inflight.len() > 0 && time.Since(inflight.front().sent) >= p.cfg.Timeout {
				return fmt.Errorf("no acknowledgement within %v", p.cfg.Timeout)
			}
		}
	}
}

// popAcked takes the acknowledged messages off the front of inflight,
// and says whether there were any.
func (p *Publisher) popAcked(c *mqttconn.Conn, inflight *flights) bool {
	popped := false
	for inflight.len() > 0 && c.Acked(inflight.front().id) {
		p.delivered.Add(1)
		p.out.finish(inflight.front().m)
		inflight.popFront()
		popped = true
	}
	return popped
}

// send hands m to the client; a Sparkplug message gets the next seq. It
// returns the packet identifier to wait for (0 at QoS 0).
func (p *Publisher) send(c *mqttconn.Conn, m message, seq *uint64) (uint16, error) {
	payload := m.payload
	if m.sparkplug {
		payload = sparkplug.AppendSeq(payload, *seq)
		*seq = (*seq + 1) % 256
	}
	p.published.Add(1)
	return c.Publish(m.topic, payload, m.qos, m.retain)
}

// waitAck waits until the publication with packet identifier id is
// acknowledged, until deadline.
func (p *Publisher) waitAck(c *mqttconn.Conn, topic string, id uint16, deadline time.Time) error {
	if err := c.Wait(id, time.Until(deadline)); err != nil {
		if c.Err() == nil {
			return fmt.Errorf("publish to %s: no acknowledgement within %v", topic, p.cfg.Timeout)
		}
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	p.delivered.Add(1)
	return nil
}

// flushInflight waits (bounded) until every message in flight is
// acknowledged, so that births follow the data sent before them.
func (p *Publisher) flushInflight(c *mqttconn.Conn, inflight *flights, limit time.Time) error {
	for inflight.len() > 0 {
		f := inflight.front()
		if err := p.waitAck(c, f.m.topic, f.id, earliest(f.sent.Add(p.cfg.Timeout), limit)); err != nil {
			return err
		}
		p.out.finish(f.m)
		inflight.popFront()
	}
	return nil
}

// publishNow publishes one message directly (not through the outbox) and
// waits, bounded, for its acknowledgement.
func (p *Publisher) publishNow(c *mqttconn.Conn, topic string, qos byte, retain bool, payload []byte, limit time.Time) error {
	id, err := c.Publish(topic, payload, qos, retain)
	p.published.Add(1)
	if err != nil {
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	return p.waitAck(c, topic, id, earliest(time.Now().Add(p.cfg.Timeout), limit))
}

// earliest returns the earlier of a and limit; a zero limit is none.
func earliest(a, limit time.Time) time.Time {
	if !limit.IsZero() && limit.Before(a) {
		return limit
	}
	return a
}

// announce publishes what a new connection (or a rebirth) starts with —
// the scheme says what: status and meta (JSON), NBIRTH and the DBIRTHs
// (Sparkplug) — with seq from 0 for the messages that carry one.
func (p *Publisher) announce(c *mqttconn.Conn, seq *uint64) error {
	p.smu.Lock()
	var v *busView
	if p.model != nil {
		cycle, ok := p.image.Snapshot(p.img)
		if !ok {
			clear(p.img)
		}
		sv := p.viewLocked(time.Now(), cycle)
		v = &sv.busView
	}
	ms := p.sch.announce(nil, v, p.bdSeq.current())
	p.smu.Unlock()
	*seq = 0
	for _, m := range ms {
		if m.sparkplug {
			m.payload = sparkplug.AppendSeq(m.payload, *seq)
			*seq = (*seq + 1) % 256
		}
		if err := p.publishNow(c, m.topic, m.qos, m.retain, m.payload, time.Time{}); err != nil {
			return err
		}
	}
	return nil
}

// subscribe subscribes to the scheme's command topics (writes always, so
// that refused writes are answered); the connection hands what arrives to
// command.
func (p *Publisher) subscribe(c *mqttconn.Conn) error {
	if err := c.Subscribe(p.sch.subscriptions()); err != nil {
		return err
	}
	p.subscribeMeta(c)
	return nil
}

// goodbye ends a connection on Close: it tries to deliver what is
// buffered (for up to Close's grace), then publishes status offline or
// NDEATH, which a graceful disconnect does not make the broker send.
// What could not be delivered stays in the outbox.
func (p *Publisher) goodbye(c *mqttconn.Conn, inflight *flights, seq *uint64) {
	deadline := time.Now().Add(p.grace)
	err := p.flushInflight(c, inflight, deadline)
	for err == nil && time.Now().Before(deadline) {
		m, ok := p.out.pop()
		if !ok {
			break
		}
		if !p.sch.prepare(&m) {
			p.out.finish(m)
			continue
		}
		id, perr := p.send(c, m, seq)
		inflight.push(flight{m: m, id: id, sent: time.Now()})
		if err = perr; err == nil {
			err = p.flushInflight(c, inflight, deadline)
		}
	}
	p.out.requeue(inflight.messages())
	if err == nil {
		m := p.sch.goodbye(p.bdSeq.current())
		_ = p.publishNow(c, m.topic, m.qos, m.retain, m.payload, time.Now().Add(goodbyeAck))
	}
	_ = c.Disconnect()
}

// command dispatches a live message (not retained) on a command topic to
// the scheme. It must not block.
func (p *Publisher) command(topic string, payload []byte) { p.message(topic, payload, false) }

package mqtt

import (
	"errors"
	"fmt"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/ecagent/ecagent/mqtt/sparkplug"
)

// maxInflight bounds the messages sent but not yet acknowledged.
const maxInflight = 256

// keepAlive is the MQTT keep-alive: a broker that stops answering is
// noticed within about twice this.
const keepAlive = 10 * time.Second

// errClosing ends a session because Close was called.
var errClosing = errors.New("mqtt: closing")

// flight is a message handed to the client, until its token completes.
type flight struct {
	m    message
	tok  paho.Token
	sent time.Time
}

// runSession connects, serves the connection until it breaks, and
// reconnects with exponential back-off, until Close.
func (p *Publisher) runSession() {
	defer close(p.sessionDone)
	backoff := p.cfg.ReconnectMin
	first, wasUp := true, false
	for {
		select {
		case <-p.closing:
			return
		default:
		}
		c, lost, err := p.connect()
		if err != nil {
			if wasUp || first {
				p.log.Warn("mqtt: cannot reach the broker; buffering", "broker", p.cfg.Broker, "err", err,
					"retry_in", backoff, "buffered", p.out.Len())
			} else {
				p.log.Debug("mqtt: still cannot reach the broker", "err", err, "buffered", p.out.Len())
			}
			first, wasUp = false, false
			select {
			case <-p.closing:
				return
			case <-time.After(backoff):
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
		p.log.Info("mqtt: connected", "broker", p.cfg.Broker, "client_id", p.cfg.ClientID, "buffered", p.out.Len())
		err = p.serve(c, lost)
		p.connected.Store(false)
		if errors.Is(err, errClosing) {
			return
		}
		p.log.Warn("mqtt: connection lost", "err", err, "buffered", p.out.Len())
	}
}

// connect opens one connection, with the will of this connection: status
// offline (JSON) or NDEATH with a new bdSeq (Sparkplug).
func (p *Publisher) connect() (paho.Client, chan error, error) {
	opts := paho.NewClientOptions().
		AddBroker(p.cfg.Broker).
		SetClientID(p.cfg.ClientID).
		SetCleanSession(true). // Sparkplug requires it; the outbox does the buffering
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetConnectTimeout(p.cfg.Timeout).
		SetWriteTimeout(p.cfg.Timeout).
		SetPingTimeout(p.cfg.Timeout).
		SetKeepAlive(keepAlive)
	if p.cfg.Username != "" {
		opts.SetUsername(p.cfg.Username)
		opts.SetPassword(p.cfg.Password)
	}
	if p.cfg.TLS != nil {
		opts.SetTLSConfig(p.cfg.TLS)
	}
	bdSeq, err := p.bdSeq.next()
	if err != nil {
		p.log.Warn("mqtt: the bdSeq is not kept for the next run", "err", err)
	}
	will := p.sch.will(bdSeq)
	opts.SetBinaryWill(will.topic, will.payload, will.qos, will.retain)
	lost := make(chan error, 1)
	opts.SetConnectionLostHandler(func(_ paho.Client, err error) {
		select {
		case lost <- err:
		default:
		}
	})
	c := paho.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(p.cfg.Timeout) {
		c.Disconnect(0)
		return nil, nil, fmt.Errorf("no answer to CONNECT within %v", p.cfg.Timeout)
	}
	if err := tok.Error(); err != nil {
		return nil, nil, err
	}
	return c, lost, nil
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
func (p *Publisher) serve(c paho.Client, lost chan error) (err error) {
	inflight := new(flights)
	seq := uint64(0)
	defer func() {
		if errors.Is(err, errClosing) {
			p.goodbye(c, inflight, &seq)
			return
		}
		c.Disconnect(0)
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
	for {
		if p.rebirth.Swap(false) {
			if err := p.flushInflight(inflight); err != nil {
				return err
			}
			if err := p.announce(c, &seq); err != nil {
				return err
			}
		}
		for inflight.len() < maxInflight {
			m, ok := p.out.pop()
			if !ok {
				break
			}
			if !p.sch.prepare(&m) {
				p.out.recycle(m.payload)
				continue
			}
			inflight.push(flight{m: m, tok: p.send(c, m, &seq), sent: time.Now()})
		}
		var front <-chan struct{}
		if inflight.len() > 0 {
			front = inflight.front().tok.Done()
			timer.Reset(time.Until(inflight.front().sent.Add(p.cfg.Timeout)))
		}
		select {
		case <-p.closing:
			return errClosing
		case err := <-lost:
			return fmt.Errorf("connection lost: %w", err)
		case <-p.out.ready:
		case <-p.wake:
		case <-front:
			for inflight.len() > 0 && isDone(inflight.front().tok) {
				f := inflight.front()
				if err := f.tok.Error(); err != nil {
					return fmt.Errorf("publish to %s: %w", f.m.topic, err)
				}
				p.delivered.Add(1)
				p.out.recycle(f.m.payload)
				inflight.popFront()
			}
		case <-timer.C:
			if inflight.len() > 0 && time.Since(inflight.front().sent) >= p.cfg.Timeout {
				return fmt.Errorf("no acknowledgement within %v", p.cfg.Timeout)
			}
		}
	}
}

// send hands m to the client; a Sparkplug message gets the next seq.
func (p *Publisher) send(c paho.Client, m message, seq *uint64) paho.Token {
	payload := m.payload
	if m.sparkplug {
		payload = sparkplug.AppendSeq(payload, *seq)
		*seq = (*seq + 1) % 256
	}
	p.published.Add(1)
	return c.Publish(m.topic, m.qos, m.retain, payload)
}

func isDone(t paho.Token) bool {
	select {
	case <-t.Done():
		return true
	default:
		return false
	}
}

// flushInflight waits (bounded) until every message in flight is
// acknowledged, so that births follow the data sent before them.
func (p *Publisher) flushInflight(inflight *flights) error {
	for inflight.len() > 0 {
		f := inflight.front()
		if !f.tok.WaitTimeout(time.Until(f.sent.Add(p.cfg.Timeout))) {
			return fmt.Errorf("no acknowledgement within %v", p.cfg.Timeout)
		}
		if err := f.tok.Error(); err != nil {
			return fmt.Errorf("publish to %s: %w", f.m.topic, err)
		}
		p.delivered.Add(1)
		p.out.recycle(f.m.payload)
		inflight.popFront()
	}
	return nil
}

// publishNow publishes one message directly (not through the outbox) and
// waits, bounded, for its token.
func (p *Publisher) publishNow(c paho.Client, topic string, qos byte, retain bool, payload []byte) error {
	tok := c.Publish(topic, qos, retain, payload)
	p.published.Add(1)
	if !tok.WaitTimeout(p.cfg.Timeout) {
		return fmt.Errorf("publish to %s: no acknowledgement within %v", topic, p.cfg.Timeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("publish to %s: %w", topic, err)
	}
	p.delivered.Add(1)
	return nil
}

// announce publishes what a new connection (or a rebirth) starts with —
// the scheme says what: status and meta (JSON), NBIRTH and the DBIRTHs
// (Sparkplug) — with seq from 0 for the messages that carry one.
func (p *Publisher) announce(c paho.Client, seq *uint64) error {
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
		if err := p.publishNow(c, m.topic, m.qos, m.retain, m.payload); err != nil {
			return err
		}
	}
	return nil
}

// subscribe subscribes to the scheme's command topics (writes always, so
// that refused writes are answered).
func (p *Publisher) subscribe(c paho.Client) error {
	tok := c.SubscribeMultiple(p.sch.subscriptions(), func(_ paho.Client, m paho.Message) { p.command(m.Topic(), m.Payload()) })
	if !tok.WaitTimeout(p.cfg.Timeout) {
		return fmt.Errorf("subscribe: no answer within %v", p.cfg.Timeout)
	}
	if err := tok.Error(); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	return nil
}

// goodbye ends a connection on Close: it tries to deliver what is
// buffered (for up to Close's grace), then publishes status offline or
// NDEATH, which a graceful disconnect does not make the broker send.
// What could not be delivered stays in the outbox.
func (p *Publisher) goodbye(c paho.Client, inflight *flights, seq *uint64) {
	deadline := time.Now().Add(p.grace)
	err := p.flushInflight(inflight)
	for err == nil && time.Now().Before(deadline) {
		m, ok := p.out.pop()
		if !ok {
			break
		}
		if !p.sch.prepare(&m) {
			p.out.recycle(m.payload)
			continue
		}
		inflight.push(flight{m: m, tok: p.send(c, m, seq), sent: time.Now()})
		err = p.flushInflight(inflight)
	}
	p.out.requeue(inflight.messages())
	if err == nil {
		m := p.sch.goodbye(p.bdSeq.current())
		_ = p.publishNow(c, m.topic, m.qos, m.retain, m.payload)
	}
	c.Disconnect(250)
}

// command dispatches a message on a command topic to the scheme. It runs
// on the MQTT client's goroutine and must not block.
func (p *Publisher) command(topic string, payload []byte) { p.sch.command(topic, payload) }

package mqttconn

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"syscall"
	"time"

	"github.com/ecagent/ecagent/agent/mqtt/mqttconn/packet"
)

// The reading side of a connection: packets from the broker, and the
// keep-alive pings.

// readLoop reads packets until the connection fails.
func (c *Conn) readLoop(buf []byte) {
	defer c.readers.Done()
	for {
		h, body, err := packet.Read(c.br, &buf, c.maxPacket)
		if err == nil {
			err = c.handle(h, body)
		}
		if err != nil {
			if closedByBroker(err) {
				err = fmt.Errorf("%w (%w)", ErrClosedByBroker, err)
			}
			c.fail(fmt.Errorf("mqttconn: read from %s: %w", c.addr, err))
			return
		}
	}
}

// handle handles one inbound packet.
func (c *Conn) handle(h byte, body []byte) error {
	c.lastRead.Store(time.Now().UnixNano())
	switch h >> 4 {
	case packet.TypePuback:
		id, err := packet.ParseID("PUBACK", body)
		if err != nil {
			return err
		}
		c.imu.Lock()
		if c.ids[id] == idInflight {
			c.ids[id] = idAcked
		}
		c.imu.Unlock()
		select {
		case c.acks <- struct{}{}:
		default:
		}
	case packet.TypePingresp:
		c.pingSent.Store(0)
	case packet.TypeSuback:
		id, codes, err := packet.ParseSuback(body)
		if err != nil {
			return err
		}
		select {
		case c.subacks <- suback{id: id, codes: slices.Clone(codes)}:
		default:
		}
	case packet.TypeUnsuback:
	case packet.TypeDisconnect:
		return errDisconnected
	case packet.TypePublish:
		p, err := packet.ParsePublish(h, body)
		if err != nil {
			return err
		}
		if p.QoS > 1 {
			return errors.New("inbound PUBLISH at QoS 2 (not supported)")
		}
		if c.onMessage != nil {
			c.onMessage(string(p.Topic), slices.Clone(p.Payload), p.Retain, p.Dup)
		}
		if p.QoS == 1 {
			return c.write("puback", func(b []byte) []byte { return packet.AppendUint16(append(b, packet.TypePuback<<4, 2), p.ID) })
		}
	default:
		return fmt.Errorf("unexpected packet of type %d", h>>4)
	}
	return nil
}

// errDisconnected is the broker's DISCONNECT.
var errDisconnected = errors.New("DISCONNECT from the broker")

// closedByBroker reports whether a read error means the broker ended the
// connection: the end of the stream between packets, a reset, or its
// DISCONNECT.
func closedByBroker(err error) bool {
	return err == io.EOF || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, errDisconnected)
}

// pinger sends PINGREQ after half the keep-alive without traffic either
// way, and fails the connection when one is not answered within the
// timeout. It uses one timer.
func (c *Conn) pinger() {
	defer c.readers.Done()
	every := c.keepAlive / 2
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		now := time.Now()
		next := every
		if sent := c.pingSent.Load(); sent != 0 {
			if left := time.Duration(sent + int64(c.timeout) - now.UnixNano()); left > 0 {
				next = min(next, left)
			} else {
				c.fail(fmt.Errorf("mqttconn: no PINGRESP from %s within %v", c.addr, c.timeout))
				return
			}
		} else if idle := max(now.UnixNano()-c.lastWrite.Load(), now.UnixNano()-c.lastRead.Load()); time.Duration(idle) >= every-every/10 {
			c.pingSent.Store(now.UnixNano())
			_ = c.write("ping", func(b []byte) []byte { return append(b, packet.TypePingreq<<4, 0) })
			next = min(every, c.timeout)
		}
		t.Reset(next)
	}
}

// Package packet encodes and decodes MQTT 3.1.1 control packets, the
// subset package mqttconn's client sends and reads. It does no I/O but
// through the reader it is given; its decoders are fuzzed here, in a
// binary that links nothing else.
package packet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Control packet types (MQTT 3.1.1, section 2.2.1): the high nibble of a
// packet's first byte.
const (
	TypeConnect    = 1
	TypeConnack    = 2
	TypePublish    = 3
	TypePuback     = 4
	TypePubrec     = 5
	TypePubrel     = 6
	TypePubcomp    = 7
	TypeSubscribe  = 8
	TypeSuback     = 9
	TypeUnsuback   = 11
	TypePingreq    = 12
	TypePingresp   = 13
	TypeDisconnect = 14
)

// MaxRemaining is the largest remaining length four varint bytes hold.
const MaxRemaining = 268435455

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed packet")

// Malformed returns an error wrapping ErrMalformed, with the message
// format makes of args.
func Malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// AppendRemaining appends n as a remaining-length varint.
func AppendRemaining(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// AppendUint16 appends v big-endian.
func AppendUint16(b []byte, v uint16) []byte { return append(b, byte(v>>8), byte(v)) }

// AppendString appends s with its 16-bit length.
func AppendString(b []byte, s string) []byte {
	b = AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// AppendBytes appends s with its 16-bit length.
func AppendBytes(b []byte, s []byte) []byte {
	b = AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// AppendPublish appends a PUBLISH packet; id is ignored at QoS 0.
func AppendPublish(b []byte, topic string, payload []byte, qos byte, retain bool, id uint16) []byte {
	h := byte(TypePublish<<4) | qos<<1
	if retain {
		h |= 0x01
	}
	n := 2 + len(topic) + len(payload)
	if qos > 0 {
		n += 2
	}
	b = append(b, h)
	b = AppendRemaining(b, n)
	b = AppendString(b, topic)
	if qos > 0 {
		b = AppendUint16(b, id)
	}
	return append(b, payload...)
}

// AppendSubscribe appends a SUBSCRIBE packet for topics at qos.
func AppendSubscribe(b []byte, id uint16, topics []string, qos []byte) []byte {
	n := 2
	for _, t := range topics {
		n += 2 + len(t) + 1
	}
	b = append(b, TypeSubscribe<<4|0x02)
	b = AppendRemaining(b, n)
	b = AppendUint16(b, id)
	for i, t := range topics {
		b = AppendString(b, t)
		b = append(b, qos[i])
	}
	return b
}

// Read reads one control packet: its first byte, and its body (the
// variable header and payload) in *buf, which it grows as needed. A body
// longer than limit is an error (and is not read).
func Read(r *bufio.Reader, buf *[]byte, limit int) (byte, []byte, error) {
	h, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, mul := 0, 1
	for i := 0; ; i++ {
		if i == 4 {
			return 0, nil, Malformed("remaining length longer than 4 bytes")
		}
		d, err := r.ReadByte()
		if err != nil {
			return 0, nil, NoEOF(err)
		}
		n += int(d&0x7f) * mul
		mul *= 128
		if d&0x80 == 0 {
			break
		}
	}
	if n > limit {
		return 0, nil, Malformed("packet of %d bytes, more than the limit of %d", n, limit)
	}
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	body := (*buf)[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, NoEOF(err)
	}
	return h, body, nil
}

// NoEOF turns an end of stream inside a packet into io.ErrUnexpectedEOF.
func NoEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Publish is a decoded PUBLISH; Topic and Payload alias the body.
type Publish struct {
	Topic   []byte
	Payload []byte
	ID      uint16
	QoS     byte
	Retain  bool
	// Dup is the DUP flag: the sender delivers this packet again.
	Dup bool
}

// ParsePublish decodes a PUBLISH body with first byte h.
func ParsePublish(h byte, body []byte) (Publish, error) {
	p := Publish{QoS: (h >> 1) & 3, Retain: h&1 != 0, Dup: h&8 != 0}
	if p.QoS == 3 {
		return p, Malformed("PUBLISH with QoS 3")
	}
	if len(body) < 2 {
		return p, Malformed("PUBLISH of %d bytes", len(body))
	}
	tl := int(body[0])<<8 | int(body[1])
	if 2+tl > len(body) {
		return p, Malformed("PUBLISH topic of %d bytes in a body of %d", tl, len(body))
	}
	p.Topic, body = body[2:2+tl], body[2+tl:]
	if p.QoS > 0 {
		if len(body) < 2 {
			return p, Malformed("PUBLISH without a packet identifier")
		}
		p.ID = uint16(body[0])<<8 | uint16(body[1])
		if p.ID == 0 {
			return p, Malformed("PUBLISH with packet identifier 0")
		}
		body = body[2:]
	}
	p.Payload = body
	return p, nil
}

// ParseID decodes the body of a PUBACK (and the like): a packet id.
func ParseID(name string, body []byte) (uint16, error) {
	if len(body) != 2 {
		return 0, Malformed("%s of %d bytes, want 2", name, len(body))
	}
	return uint16(body[0])<<8 | uint16(body[1]), nil
}

// ParseSuback decodes a SUBACK body: the packet id and the return codes.
func ParseSuback(body []byte) (uint16, []byte, error) {
	if len(body) < 3 {
		return 0, nil, Malformed("SUBACK of %d bytes", len(body))
	}
	return uint16(body[0])<<8 | uint16(body[1]), body[2:], nil
}

// ParseConnack decodes a CONNACK body: session present and return code.
func ParseConnack(body []byte) (bool, byte, error) {
	if len(body) != 2 {
		return false, 0, Malformed("CONNACK of %d bytes, want 2", len(body))
	}
	return body[0]&1 != 0, body[1], nil
}

// Decode reads and parses one packet as mqttconn's reader does, and
// returns the packet type.
func Decode(r *bufio.Reader, buf *[]byte, limit int) (byte, error) {
	h, body, err := Read(r, buf, limit)
	if err != nil {
		return 0, err
	}
	switch h >> 4 {
	case TypePublish:
		_, err = ParsePublish(h, body)
	case TypePuback:
		_, err = ParseID("PUBACK", body)
	case TypeSuback:
		_, _, err = ParseSuback(body)
	case TypeConnack:
		_, _, err = ParseConnack(body)
	case TypePingresp:
		if len(body) != 0 {
			err = Malformed("PINGRESP of %d bytes", len(body))
		}
	}
	return h >> 4, err
}

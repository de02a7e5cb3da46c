package mqttconn

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Control packet types (MQTT 3.1.1, section 2.2.1).
const (
	typeConnect    = 1
	typeConnack    = 2
	typePublish    = 3
	typePuback     = 4
	typePubrec     = 5
	typePubrel     = 6
	typePubcomp    = 7
	typeSubscribe  = 8
	typeSuback     = 9
	typeUnsuback   = 11
	typePingreq    = 12
	typePingresp   = 13
	typeDisconnect = 14
)

// maxRemaining is the largest remaining length four varint bytes hold.
const maxRemaining = 268435455

// errMalformed is wrapped by every decoding error.
var errMalformed = errors.New("malformed packet")

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errMalformed}, args...)...)
}

// appendRemaining appends n as a remaining-length varint.
func appendRemaining(b []byte, n int) []byte {
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

func appendUint16(b []byte, v uint16) []byte { return append(b, byte(v>>8), byte(v)) }

func appendString(b []byte, s string) []byte {
	b = appendUint16(b, uint16(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, s []byte) []byte {
	b = appendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// appendConnect appends a CONNECT packet.
func appendConnect(b []byte, o *Options, keepAliveSec uint16) []byte {
	n := 10 + 2 + len(o.ClientID)
	var flags byte
	if o.CleanSession {
		flags |= 0x02
	}
	if o.Will != nil {
		flags |= 0x04 | o.Will.QoS<<3
		if o.Will.Retain {
			flags |= 0x20
		}
		n += 2 + len(o.Will.Topic) + 2 + len(o.Will.Payload)
	}
	if o.Username != "" {
		flags |= 0x80
		n += 2 + len(o.Username)
		if o.Password != "" {
			flags |= 0x40
			n += 2 + len(o.Password)
		}
	}
	b = append(b, typeConnect<<4)
	b = appendRemaining(b, n)
	b = appendString(b, "MQTT")
	b = append(b, 4, flags)
	b = appendUint16(b, keepAliveSec)
	b = appendString(b, o.ClientID)
	if o.Will != nil {
		b = appendString(b, o.Will.Topic)
		b = appendBytes(b, o.Will.Payload)
	}
	if o.Username != "" {
		b = appendString(b, o.Username)
		if o.Password != "" {
			b = appendString(b, o.Password)
		}
	}
	return b
}

// appendPublish appends a PUBLISH packet; id is ignored at QoS 0.
func appendPublish(b []byte, topic string, payload []byte, qos byte, retain bool, id uint16) []byte {
	h := byte(typePublish<<4) | qos<<1
	if retain {
		h |= 0x01
	}
	n := 2 + len(topic) + len(payload)
	if qos > 0 {
		n += 2
	}
	b = append(b, h)
	b = appendRemaining(b, n)
	b = appendString(b, topic)
	if qos > 0 {
		b = appendUint16(b, id)
	}
	return append(b, payload...)
}

// appendSubscribe appends a SUBSCRIBE packet for topics at qos.
func appendSubscribe(b []byte, id uint16, topics []string, qos []byte) []byte {
	n := 2
	for _, t := range topics {
		n += 2 + len(t) + 1
	}
	b = append(b, typeSubscribe<<4|0x02)
	b = appendRemaining(b, n)
	b = appendUint16(b, id)
	for i, t := range topics {
		b = appendString(b, t)
		b = append(b, qos[i])
	}
	return b
}

// readPacket reads one control packet: its first byte, and its body (the
// variable header and payload) in *buf, which it grows as needed. A body
// longer than limit is an error (and is not read).
func readPacket(r *bufio.Reader, buf *[]byte, limit int) (byte, []byte, error) {
	h, err := r.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	n, mul := 0, 1
	for i := 0; ; i++ {
		if i == 4 {
			return 0, nil, malformed("remaining length longer than 4 bytes")
		}
		d, err := r.ReadByte()
		if err != nil {
			return 0, nil, noEOF(err)
		}
		n += int(d&0x7f) * mul
		mul *= 128
		if d&0x80 == 0 {
			break
		}
	}
	if n > limit {
		return 0, nil, malformed("packet of %d bytes, more than the limit of %d", n, limit)
	}
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	body := (*buf)[:n]
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, noEOF(err)
	}
	return h, body, nil
}

// noEOF turns an end of stream inside a packet into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// publish is a decoded PUBLISH; topic and payload alias the body.
type publish struct {
	topic   []byte
	payload []byte
	id      uint16
	qos     byte
	retain  bool
}

// parsePublish decodes a PUBLISH body with first byte h.
func parsePublish(h byte, body []byte) (publish, error) {
	p := publish{qos: (h >> 1) & 3, retain: h&1 != 0}
	if p.qos == 3 {
		return p, malformed("PUBLISH with QoS 3")
	}
	if len(body) < 2 {
		return p, malformed("PUBLISH of %d bytes", len(body))
	}
	tl := int(body[0])<<8 | int(body[1])
	if 2+tl > len(body) {
		return p, malformed("PUBLISH topic of %d bytes in a body of %d", tl, len(body))
	}
	p.topic, body = body[2:2+tl], body[2+tl:]
	if p.qos > 0 {
		if len(body) < 2 {
			return p, malformed("PUBLISH without a packet identifier")
		}
		p.id = uint16(body[0])<<8 | uint16(body[1])
		if p.id == 0 {
			return p, malformed("PUBLISH with packet identifier 0")
		}
		body = body[2:]
	}
	p.payload = body
	return p, nil
}

// parseID decodes the body of a PUBACK (and the like): a packet id.
func parseID(name string, body []byte) (uint16, error) {
	if len(body) != 2 {
		return 0, malformed("%s of %d bytes, want 2", name, len(body))
	}
	return uint16(body[0])<<8 | uint16(body[1]), nil
}

// parseSuback decodes a SUBACK body: the packet id and the return codes.
func parseSuback(body []byte) (uint16, []byte, error) {
	if len(body) < 3 {
		return 0, nil, malformed("SUBACK of %d bytes", len(body))
	}
	return uint16(body[0])<<8 | uint16(body[1]), body[2:], nil
}

// parseConnack decodes a CONNACK body: session present and return code.
func parseConnack(body []byte) (bool, byte, error) {
	if len(body) != 2 {
		return false, 0, malformed("CONNACK of %d bytes, want 2", len(body))
	}
	return body[0]&1 != 0, body[1], nil
}

// decode reads and parses one packet as the reader does, for tests and
// fuzzing: it returns the packet type.
func decode(r *bufio.Reader, buf *[]byte, limit int) (byte, error) {
	h, body, err := readPacket(r, buf, limit)
	if err != nil {
		return 0, err
	}
	switch h >> 4 {
	case typePublish:
		_, err = parsePublish(h, body)
	case typePuback:
		_, err = parseID("PUBACK", body)
	case typeSuback:
		_, _, err = parseSuback(body)
	case typeConnack:
		_, _, err = parseConnack(body)
	case typePingresp:
		if len(body) != 0 {
			err = malformed("PINGRESP of %d bytes", len(body))
		}
	}
	return h >> 4, err
}

package mqtt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/ecagent/ecagent/agent/mqtt/walfile"
)

// spoolMagic starts a buffer file (mqtt.bufferfile) of the format a
// clean stop wrote before the write-ahead log; it is still read.
const spoolMagic = "ecagent-mqtt-outbox-1\n"

// maxSpoolField bounds a topic or payload read from a buffer file: the
// bound of the write-ahead log that replaced the format.
const maxSpoolField = walfile.MaxField

// loadSpool reads a buffer file of the format before the write-ahead
// log (wal.go), which a clean stop wrote.
func loadSpool(r io.Reader) ([]message, error) { return readSpool(bufio.NewReader(r)) }

func readSpool(r *bufio.Reader) ([]message, error) {
	magic := make([]byte, len(spoolMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != spoolMagic {
		return nil, errors.New("not an ecagent MQTT buffer file")
	}
	var out []message
	for {
		flags, err := r.ReadByte()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		made, err := binary.ReadVarint(r)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", len(out), err)
		}
		topic, err := readField(r)
		if err != nil {
			return nil, fmt.Errorf("message %d: topic: %w", len(out), err)
		}
		payload, err := readField(r)
		if err != nil {
			return nil, fmt.Errorf("message %d: payload: %w", len(out), err)
		}
		out = append(out, message{topic: string(topic), payload: payload, qos: flags & 3,
			retain: flags&4 != 0, sparkplug: flags&8 != 0, made: made})
	}
}

func readField(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxSpoolField {
		return nil, fmt.Errorf("field of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

package mqtt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// spoolMagic starts a buffer file (mqtt.bufferfile).
const spoolMagic = "ecagent-mqtt-outbox-1\n"

// maxSpoolField bounds a topic or payload read from a buffer file.
const maxSpoolField = 16 << 20

// saveOutbox writes ms to path (atomically: a reader never sees half a
// file); no messages removes the file.
func saveOutbox(path string, ms []message) error {
	if len(ms) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("mqtt: buffer file: %w", err)
		}
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("mqtt: buffer file: %w", err)
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	_, _ = w.WriteString(spoolMagic)
	var num [binary.MaxVarintLen64]byte
	for _, m := range ms {
		flags := m.qos
		if m.retain {
			flags |= 4
		}
		if m.sparkplug {
			flags |= 8
		}
		_ = w.WriteByte(flags)
		_, _ = w.Write(num[:binary.PutVarint(num[:], m.made)])
		_, _ = w.Write(num[:binary.PutUvarint(num[:], uint64(len(m.topic)))])
		_, _ = w.WriteString(m.topic)
		_, _ = w.Write(num[:binary.PutUvarint(num[:], uint64(len(m.payload)))])
		_, _ = w.Write(m.payload)
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("mqtt: buffer file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("mqtt: buffer file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mqtt: buffer file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("mqtt: buffer file: %w", err)
	}
	return nil
}

// loadOutbox reads the messages saveOutbox wrote to path and removes the
// file. A missing file is no messages.
func loadOutbox(path string) ([]message, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mqtt: buffer file: %w", err)
	}
	defer f.Close()
	ms, err := readSpool(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("mqtt: buffer file %s: %w (remove it to start without it)", path, err)
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("mqtt: buffer file: %w", err)
	}
	return ms, nil
}

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

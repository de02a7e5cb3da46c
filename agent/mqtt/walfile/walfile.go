// Package walfile is the on-disk format of the MQTT outbox's write-ahead
// log (mqtt.bufferfile): the records, their checksums and the replay of a
// log's bytes into the messages still outstanding. It does no I/O; the
// writer, with its group fsync and compaction, is package mqtt's.
//
// A log is Magic followed by records. Record: length (uint32 LE, of type
// and body), CRC-32C (uint32 LE, of type and body), type (1 byte), body:
//
//	Msg:     seq, flags, made, topic, payload
//	Done:    seq (delivered, or superseded by a newer retained message)
//	Drop:    seq (dropped for room: counted)
//	Dropped: count (drops carried over by a compaction)
//
// Numbers are varints (encoding/binary); flags hold the QoS (bits 0–1),
// retain (bit 2) and Sparkplug (bit 3).
package walfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// Magic starts a write-ahead log.
const Magic = "ecagent-mqtt-wal-1\n"

// Record types.
const (
	Msg     byte = 1
	Done    byte = 2
	Drop    byte = 3
	Dropped byte = 4
)

const (
	// HeaderLen is the length and CRC before a record's type.
	HeaderLen = 8
	// MaxField bounds a topic or a payload.
	MaxField = 16 << 20
	// MaxRecord bounds a record (type and body).
	MaxRecord = 2*MaxField + 64
)

// Message is a buffered MQTT message as the log keeps it.
type Message struct {
	Topic     string
	Payload   []byte
	QoS       byte
	Retain    bool
	Sparkplug bool  // a Sparkplug B message (marked is_historical on replay)
	Made      int64 // when it was produced, Unix ns
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// AppendRecord appends rec (a record's type and body) with its header.
func AppendRecord(b, rec []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(rec)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(rec, castagnoli))
	return append(b, rec...)
}

// AppendMessage appends the type and body of a Msg record of m as message
// seq.
func AppendMessage(b []byte, seq uint64, m *Message) []byte {
	b = append(b, Msg)
	b = binary.AppendUvarint(b, seq)
	flags := m.QoS
	if m.Retain {
		flags |= 4
	}
	if m.Sparkplug {
		flags |= 8
	}
	b = append(b, flags)
	b = binary.AppendVarint(b, m.Made)
	b = binary.AppendUvarint(b, uint64(len(m.Topic)))
	b = append(b, m.Topic...)
	b = binary.AppendUvarint(b, uint64(len(m.Payload)))
	return append(b, m.Payload...)
}

// AppendSeq appends the type and body of a Done, Drop or Dropped record.
func AppendSeq(b []byte, typ byte, seq uint64) []byte {
	return binary.AppendUvarint(append(b, typ), seq)
}

// DecodeMessage decodes a Msg record (type and body), returning its seq.
// The message's payload does not share rec's memory.
func DecodeMessage(rec []byte) (uint64, Message, error) {
	if len(rec) < 1 || rec[0] != Msg {
		return 0, Message{}, errors.New("walfile: not a message record")
	}
	seq, n := binary.Uvarint(rec[1:])
	if n <= 0 {
		return 0, Message{}, errors.New("walfile: bad sequence number")
	}
	m, err := decodeBody(rec[1+n:])
	return seq, m, err
}

// decodeBody decodes what follows the seq of a Msg record.
func decodeBody(b []byte) (Message, error) {
	if len(b) < 1 {
		return Message{}, io.ErrUnexpectedEOF
	}
	flags := b[0]
	b = b[1:]
	made, n := binary.Varint(b)
	if n <= 0 {
		return Message{}, errors.New("walfile: bad time")
	}
	b = b[n:]
	field := func() ([]byte, error) {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) || l > MaxField {
			return nil, io.ErrUnexpectedEOF
		}
		f := b[n : n+int(l)]
		b = b[n+int(l):]
		return f, nil
	}
	topic, err := field()
	if err != nil {
		return Message{}, err
	}
	payload, err := field()
	if err != nil {
		return Message{}, err
	}
	if len(b) != 0 || flags&^15 != 0 || flags&3 == 3 {
		return Message{}, errors.New("walfile: bad message record")
	}
	return Message{Topic: string(topic), Payload: slices.Clone(payload), QoS: flags & 3, Retain: flags&4 != 0,
		Sparkplug: flags&8 != 0, Made: made}, nil
}

// Replay is what a log held.
type Replay struct {
	Messages []Message // outstanding, in the order they were logged
	Dropped  uint64    // messages the run that wrote the log dropped from its backlog
	Corrupt  uint64    // records whose CRC or contents are wrong, skipped
	Torn     int64     // bytes of a partly written last record, ignored
}

// Parse replays the log b: the messages logged and neither done nor
// dropped, in order. A torn tail (a crash mid-write) is ignored and
// measured, a damaged record skipped and counted; a damaged length ends
// the replay there, since nothing after it can be found. Only b without
// Magic at its start is an error.
func Parse(b []byte) (Replay, error) {
	var rp Replay
	if len(b) < len(Magic) || string(b[:len(Magic)]) != Magic {
		return rp, fmt.Errorf("walfile: not a write-ahead log (no %q at the start)", Magic[:len(Magic)-1])
	}
	out := map[uint64]Message{}
	for rest := b[len(Magic):]; len(rest) > 0; {
		if len(rest) < HeaderLen {
			rp.Torn = int64(len(rest))
			break
		}
		n := int(binary.LittleEndian.Uint32(rest))
		if n < 1 || n > MaxRecord {
			rp.Corrupt++
			break
		}
		if HeaderLen+n > len(rest) {
			rp.Torn = int64(len(rest))
			break
		}
		sum, rec := binary.LittleEndian.Uint32(rest[4:]), rest[HeaderLen:HeaderLen+n]
		rest = rest[HeaderLen+n:]
		if crc32.Checksum(rec, castagnoli) != sum || apply(rec, out, &rp) != nil {
			rp.Corrupt++
		}
	}
	seqs := make([]uint64, 0, len(out))
	for s := range out {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	for _, s := range seqs {
		rp.Messages = append(rp.Messages, out[s])
	}
	return rp, nil
}

// apply applies one record (type and body) to the messages outstanding.
func apply(rec []byte, out map[uint64]Message, rp *Replay) error {
	if rec[0] == Msg {
		seq, m, err := DecodeMessage(rec)
		if err != nil {
			return err
		}
		out[seq] = m
		return nil
	}
	seq, n := binary.Uvarint(rec[1:])
	if n <= 0 || 1+n != len(rec) {
		return errors.New("walfile: bad record")
	}
	switch rec[0] {
	case Done:
		delete(out, seq)
	case Drop:
		if _, ok := out[seq]; ok {
			delete(out, seq)
			rp.Dropped++
		}
	case Dropped:
		rp.Dropped += seq
	default:
		return fmt.Errorf("walfile: record type %d", rec[0])
	}
	return nil
}

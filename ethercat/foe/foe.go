// Package foe encodes and decodes File access over EtherCAT (FoE) messages
// (ETG.1000.6, FoE): read and write requests, data packets, acknowledges,
// errors and busy replies, each behind the mailbox header of type FoE
// (0x04). It only deals with bytes; moving them through a slave's mailbox
// and the order of the exchange are the master's job (master.FoERead,
// master.FoEWrite).
//
// A write: the master sends a write request (file name, password), the
// slave acknowledges packet 0; the master sends data packets 1, 2, … each
// acknowledged with its number; a packet shorter than the most the
// mailbox takes ends the file (an empty one when the file fills the last
// packet exactly). A slave that needs time answers a data packet with
// busy, and the master sends the packet again. A read: the master sends a
// read request, the slave sends data packets, the master acknowledges
// each; the short packet ends it. Either side may end a transfer with an
// error (code and text).
package foe

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/coe"
)

// HeaderLen is the size of the FoE header after the mailbox header:
// opcode, a reserved byte and a 32-bit field (password, packet number,
// error code, or busy progress).
const HeaderLen = 6

// Overhead is what a mailbox message of FoE data carries besides the data.
const Overhead = coe.MailboxHeaderLen + HeaderLen

// OpCode is the kind of FoE message.
type OpCode uint8

// FoE opcodes (ETG.1000.6).
const (
	OpRead  OpCode = 1 // read request: password, file name
	OpWrite OpCode = 2 // write request: password, file name
	OpData  OpCode = 3 // data: packet number, data
	OpAck   OpCode = 4 // acknowledge: packet number
	OpError OpCode = 5 // error: code, text
	OpBusy  OpCode = 6 // busy: done, entire, text
)

// String names the opcode.
func (o OpCode) String() string {
	switch o {
	case OpRead:
		return "read request"
	case OpWrite:
		return "write request"
	case OpData:
		return "data"
	case OpAck:
		return "ack"
	case OpError:
		return "error"
	case OpBusy:
		return "busy"
	}
	return fmt.Sprintf("opcode %d", uint8(o))
}

// Message is one FoE message. Only the fields its Op uses are encoded.
type Message struct {
	Op       OpCode
	Password uint32 // OpRead, OpWrite
	Name     string // OpRead, OpWrite: the file name
	Packet   uint32 // OpData, OpAck: 1 for the first data packet (0 acknowledges a write request)
	Code     ErrorCode
	// Done and Entire are a busy slave's progress (OpBusy): Done of Entire.
	Done, Entire uint16
	// Data is the file data of OpData, the text of OpError and OpBusy.
	// Decode makes it alias the message buffer.
	Data []byte
}

// ErrShort reports a message too short for what it announces.
var ErrShort = errors.New("foe: message too short")

// ErrNotFoE reports a mailbox message of another type.
var ErrNotFoE = errors.New("foe: not an FoE message")

// ErrTooLong reports a message that does not fit the buffer.
var ErrTooLong = errors.New("foe: message does not fit the mailbox")

// Encode writes m with its mailbox header (counter, type FoE) into b, the
// mailbox buffer, and returns the bytes used.
func Encode(b []byte, counter uint8, m Message) (int, error) {
	var body []byte
	switch m.Op {
	case OpRead, OpWrite:
		body = []byte(m.Name)
	case OpData, OpError, OpBusy:
		body = m.Data
	}
	n := Overhead + len(body)
	if n > len(b) {
		return 0, fmt.Errorf("foe: %v of %d bytes in a %d-byte mailbox: %w", m.Op, len(body), len(b), ErrTooLong)
	}
	coe.MailboxHeader{Length: uint16(HeaderLen + len(body)), Type: coe.TypeFoE, Counter: counter}.Encode(b)
	h := b[coe.MailboxHeaderLen:]
	h[0], h[1] = uint8(m.Op), 0
	var field uint32
	switch m.Op {
	case OpRead, OpWrite:
		field = m.Password
	case OpData, OpAck:
		field = m.Packet
	case OpError:
		field = uint32(m.Code)
	case OpBusy:
		field = uint32(m.Done) | uint32(m.Entire)<<16
	}
	binary.LittleEndian.PutUint32(h[2:], field)
	copy(h[HeaderLen:], body)
	return n, nil
}

// Decode reads an FoE message from a mailbox buffer b (mailbox header
// first). Its Data aliases b.
func Decode(b []byte) (Message, error) {
	mh, err := coe.DecodeMailboxHeader(b)
	if err != nil {
		return Message{}, fmt.Errorf("foe: %w", err)
	}
	if mh.Type != coe.TypeFoE {
		return Message{}, fmt.Errorf("%w: mailbox type %v", ErrNotFoE, mh.Type)
	}
	end := coe.MailboxHeaderLen + int(mh.Length)
	if int(mh.Length) < HeaderLen || end > len(b) {
		return Message{}, fmt.Errorf("%w: mailbox length %d in %d bytes", ErrShort, mh.Length, len(b))
	}
	h := b[coe.MailboxHeaderLen:end]
	m := Message{Op: OpCode(h[0])}
	field := binary.LittleEndian.Uint32(h[2:])
	body := h[HeaderLen:]
	switch m.Op {
	case OpRead, OpWrite:
		m.Password, m.Name = field, string(body)
	case OpData:
		m.Packet, m.Data = field, body
	case OpAck:
		m.Packet = field
	case OpError:
		m.Code, m.Data = ErrorCode(field), body
	case OpBusy:
		m.Done, m.Entire, m.Data = uint16(field), uint16(field>>16), body
	default:
		return Message{}, fmt.Errorf("foe: unknown %v", m.Op)
	}
	return m, nil
}

// ErrorCode is the code of an FoE error message.
type ErrorCode uint32

// FoE error codes (ETG.1000.6, FoE error codes).
const (
	ErrNotDefined    ErrorCode = 0x8000
	ErrNotFound      ErrorCode = 0x8001
	ErrAccessDenied  ErrorCode = 0x8002
	ErrDiskFull      ErrorCode = 0x8003
	ErrIllegal       ErrorCode = 0x8004
	ErrPacketNumber  ErrorCode = 0x8005
	ErrExists        ErrorCode = 0x8006
	ErrNoUser        ErrorCode = 0x8007
	ErrBootstrapOnly ErrorCode = 0x8008
	ErrNotBootstrap  ErrorCode = 0x8009
	ErrNoRights      ErrorCode = 0x800A
	ErrProgram       ErrorCode = 0x800B
)

// String returns the code's meaning.
func (c ErrorCode) String() string {
	switch c {
	case ErrNotDefined:
		return "not defined"
	case ErrNotFound:
		return "not found"
	case ErrAccessDenied:
		return "access denied"
	case ErrDiskFull:
		return "disk full"
	case ErrIllegal:
		return "illegal"
	case ErrPacketNumber:
		return "packet number wrong"
	case ErrExists:
		return "already exists"
	case ErrNoUser:
		return "no user"
	case ErrBootstrapOnly:
		return "bootstrap only"
	case ErrNotBootstrap:
		return "not bootstrap"
	case ErrNoRights:
		return "no rights"
	case ErrProgram:
		return "program error"
	}
	return fmt.Sprintf("%#x", uint32(c))
}

// Error is an FoE error message a slave sent: the transfer is over.
type Error struct {
	Code ErrorCode
	Text string // the slave's error text, often empty
}

// Error implements error.
func (e *Error) Error() string {
	s := fmt.Sprintf("FoE error %#04x (%v)", uint32(e.Code), e.Code)
	if e.Text != "" {
		s += ": " + e.Text
	}
	return s
}

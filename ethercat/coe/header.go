// Package coe encodes and decodes EtherCAT mailbox messages and the CANopen
// over EtherCAT (CoE) services carried in them (ETG.1000.6): the mailbox
// header, the CoE header, SDO requests and responses (expedited, normal and
// segmented transfers, complete access), SDO abort codes, emergency
// messages and the SDO information service (OD list, object and entry
// descriptions, in fragments when long). It only deals with bytes; moving them through a slave's
// mailbox SyncManagers is the master's job.
package coe

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MailboxHeaderLen is the size of the mailbox header in front of every
// mailbox message.
const MailboxHeaderLen = 6

// HeaderLen is the size of the CoE header that follows the mailbox header.
const HeaderLen = 2

// SDOHeaderLen is the size of an SDO initiate request or response: command
// byte, index, sub-index and four bytes of data or size.
const SDOHeaderLen = 8

// ErrShort reports a message too short for the header or service it
// announces.
var ErrShort = errors.New("coe: message too short")

// MailboxType is the protocol of a mailbox message (mailbox header type
// field).
type MailboxType uint8

// Mailbox types.
const (
	TypeError MailboxType = 0x0 // mailbox error reply
	TypeAoE   MailboxType = 0x1 // ADS over EtherCAT
	TypeEoE   MailboxType = 0x2 // Ethernet over EtherCAT
	TypeCoE   MailboxType = 0x3 // CANopen over EtherCAT
	TypeFoE   MailboxType = 0x4 // File access over EtherCAT
	TypeSoE   MailboxType = 0x5 // Servo profile over EtherCAT
	TypeVoE   MailboxType = 0xF // vendor specific
)

// String names the mailbox type.
func (t MailboxType) String() string {
	switch t {
	case TypeError:
		return "error"
	case TypeAoE:
		return "AoE"
	case TypeEoE:
		return "EoE"
	case TypeCoE:
		return "CoE"
	case TypeFoE:
		return "FoE"
	case TypeSoE:
		return "SoE"
	case TypeVoE:
		return "VoE"
	}
	return fmt.Sprintf("type %#x", uint8(t))
}

// MailboxHeader is the 6-byte header of a mailbox message.
type MailboxHeader struct {
	Length   uint16 // bytes of mailbox data after the header
	Address  uint16 // station address of the source (slave to slave), 0 from the master
	Channel  uint8  // 6 bits, 0 for CoE
	Priority uint8  // 2 bits
	Type     MailboxType
	Counter  uint8 // 3 bits: 1..7 (0 only for the very first message)
}

// Encode writes h into b (at least MailboxHeaderLen bytes).
func (h MailboxHeader) Encode(b []byte) {
	binary.LittleEndian.PutUint16(b[0:], h.Length)
	binary.LittleEndian.PutUint16(b[2:], h.Address)
	b[4] = h.Channel&0x3F | h.Priority<<6
	b[5] = uint8(h.Type)&0x0F | (h.Counter&0x07)<<4
}

// DecodeMailboxHeader reads a mailbox header from b.
func DecodeMailboxHeader(b []byte) (MailboxHeader, error) {
	if len(b) < MailboxHeaderLen {
		return MailboxHeader{}, fmt.Errorf("mailbox header: %w", ErrShort)
	}
	return MailboxHeader{
		Length:   binary.LittleEndian.Uint16(b[0:]),
		Address:  binary.LittleEndian.Uint16(b[2:]),
		Channel:  b[4] & 0x3F,
		Priority: b[4] >> 6,
		Type:     MailboxType(b[5] & 0x0F),
		Counter:  b[5] >> 4 & 0x07,
	}, nil
}

// NextCounter returns the mailbox counter that follows c: 1..7, wrapping
// from 7 to 1 (0 is only the start value).
func NextCounter(c uint8) uint8 { return c%7 + 1 }

// Service is the CoE service of a message (CoE header).
type Service uint8

// CoE services.
const (
	ServiceEmergency   Service = 1
	ServiceSDORequest  Service = 2
	ServiceSDOResponse Service = 3
	ServiceTxPDO       Service = 4
	ServiceRxPDO       Service = 5
	ServiceTxPDORemote Service = 6
	ServiceRxPDORemote Service = 7
	ServiceSDOInfo     Service = 8
)

// String names the service.
func (s Service) String() string {
	switch s {
	case ServiceEmergency:
		return "emergency"
	case ServiceSDORequest:
		return "SDO request"
	case ServiceSDOResponse:
		return "SDO response"
	case ServiceTxPDO:
		return "TxPDO"
	case ServiceRxPDO:
		return "RxPDO"
	case ServiceTxPDORemote:
		return "TxPDO remote request"
	case ServiceRxPDORemote:
		return "RxPDO remote request"
	case ServiceSDOInfo:
		return "SDO information"
	}
	return fmt.Sprintf("service %d", uint8(s))
}

// Header is the CoE header: a 9-bit number (PDO number, 0 for SDO) and
// the service.
type Header struct {
	Number  uint16
	Service Service
}

// Encode writes h into b (at least HeaderLen bytes).
func (h Header) Encode(b []byte) {
	binary.LittleEndian.PutUint16(b, h.Number&0x01FF|uint16(h.Service&0x0F)<<12)
}

// DecodeHeader reads a CoE header from b.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, fmt.Errorf("coe header: %w", ErrShort)
	}
	v := binary.LittleEndian.Uint16(b)
	return Header{Number: v & 0x01FF, Service: Service(v >> 12)}, nil
}

// MailboxError is a mailbox error reply (mailbox type 0): the slave could
// not process the request at the mailbox level.
type MailboxError struct {
	Code uint16
}

// mailboxErrorMeaning returns the meaning of a mailbox error code
// (ETG.1000.6, mailbox error reply), or "" for an unknown one.
func mailboxErrorMeaning(code uint16) string {
	switch code {
	case 0x0001:
		return "syntax of the mailbox header is wrong"
	case 0x0002:
		return "mailbox protocol not supported"
	case 0x0003:
		return "channel field contains wrong value"
	case 0x0004:
		return "service not supported"
	case 0x0005:
		return "invalid mailbox header"
	case 0x0006:
		return "mailbox data too short"
	case 0x0007:
		return "no more memory in the slave"
	case 0x0008:
		return "length of data inconsistent"
	}
	return ""
}

// Error names the code's meaning.
func (e *MailboxError) Error() string {
	if s := mailboxErrorMeaning(e.Code); s != "" {
		return fmt.Sprintf("mailbox error %#04x: %s", e.Code, s)
	}
	return fmt.Sprintf("mailbox error %#04x", e.Code)
}

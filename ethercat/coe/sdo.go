package coe

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Specifier is the command specifier of an SDO message (the top three bits
// of its command byte). Its meaning depends on the direction: a request
// carries a client command specifier, a response a server command
// specifier.
type Specifier uint8

// Client command specifiers (SDO requests, master to slave).
const (
	RequestDownloadSegment  Specifier = 0
	RequestInitiateDownload Specifier = 1
	RequestInitiateUpload   Specifier = 2
	RequestUploadSegment    Specifier = 3
)

// Server command specifiers (SDO responses, slave to master).
const (
	ResponseUploadSegment    Specifier = 0
	ResponseDownloadSegment  Specifier = 1
	ResponseInitiateUpload   Specifier = 2
	ResponseInitiateDownload Specifier = 3
)

// SpecifierAbort aborts a transfer, in either direction.
const SpecifierAbort Specifier = 4

// segmentMinData is the data area of a segment: a shorter segment is padded
// and says how many bytes of the seven are unused.
const segmentMinData = 7

// expeditedMax is the most data an expedited transfer carries.
const expeditedMax = 4

// ErrBadSDO reports an SDO message whose fields do not make sense.
var ErrBadSDO = errors.New("coe: malformed SDO message")

// SDO is one SDO request or response, decoded. Which fields matter
// depends on the Specifier:
//
//   - initiate upload request, initiate download response: Index,
//     SubIndex, Complete;
//   - initiate download request, initiate upload response: also
//     Expedited, SizeIndicated, Size (normal transfers: the complete
//     size) and Data (the expedited value or the first part of a normal
//     transfer);
//   - segments: Toggle, and for the ones carrying data (download segment
//     request, upload segment response) Data and Last;
//   - abort: Index, SubIndex, Abort.
//
// Data aliases the decoded buffer.
type SDO struct {
	Specifier     Specifier
	Complete      bool // complete access: all sub-indexes at once
	Expedited     bool // the value travels in the 4 bytes of the header
	SizeIndicated bool
	Toggle        bool // segments alternate it, starting with false
	Last          bool // last segment
	Index         uint16
	SubIndex      uint8
	Size          uint32 // complete size of a normal transfer
	Data          []byte
	Abort         AbortCode
}

// layout is how an SDO message's bytes are arranged.
type layout uint8

const (
	layoutInitiateData layout = iota // command, index, sub, expedited data or size, data
	layoutIndexOnly                  // command, index, sub, 4 reserved bytes
	layoutSegmentData                // command, at least 7 data bytes
	layoutSegmentBare                // command, 7 reserved bytes
	layoutAbort                      // command, index, sub, abort code
)

func sdoLayout(request bool, spec Specifier) (layout, error) {
	if spec == SpecifierAbort {
		return layoutAbort, nil
	}
	switch {
	case request && spec == RequestInitiateDownload, !request && spec == ResponseInitiateUpload:
		return layoutInitiateData, nil
	case request && spec == RequestInitiateUpload, !request && spec == ResponseInitiateDownload:
		return layoutIndexOnly, nil
	case request && spec == RequestDownloadSegment, !request && spec == ResponseUploadSegment:
		return layoutSegmentData, nil
	case request && spec == RequestUploadSegment, !request && spec == ResponseDownloadSegment:
		return layoutSegmentBare, nil
	}
	return 0, fmt.Errorf("%w: command specifier %d", ErrBadSDO, spec)
}

// DecodeSDO reads an SDO message (the bytes after the CoE header); request
// tells the direction (CoE service SDO request or SDO response).
func DecodeSDO(b []byte, request bool) (SDO, error) {
	if len(b) < 1 {
		return SDO{}, fmt.Errorf("sdo: %w", ErrShort)
	}
	cmd := b[0]
	s := SDO{Specifier: Specifier(cmd >> 5)}
	l, err := sdoLayout(request, s.Specifier)
	if err != nil {
		return SDO{}, err
	}
	switch l {
	case layoutSegmentData, layoutSegmentBare:
		s.Toggle = cmd&0x10 != 0
		if l == layoutSegmentBare {
			return s, nil
		}
		s.Last = cmd&0x01 != 0
		data := b[1:]
		if len(data) <= segmentMinData {
			n := segmentMinData - int(cmd>>1&0x07)
			if n > len(data) {
				return SDO{}, fmt.Errorf("sdo segment of %d bytes announces %d: %w", len(data), n, ErrShort)
			}
			data = data[:n]
		}
		s.Data = data
		return s, nil
	}
	if len(b) < SDOHeaderLen {
		return SDO{}, fmt.Errorf("sdo: %w", ErrShort)
	}
	s.Index = binary.LittleEndian.Uint16(b[1:])
	s.SubIndex = b[3]
	switch l {
	case layoutAbort:
		s.Abort = AbortCode(binary.LittleEndian.Uint32(b[4:]))
	case layoutIndexOnly:
		s.Complete = cmd&0x10 != 0
	case layoutInitiateData:
		s.Complete = cmd&0x10 != 0
		s.Expedited = cmd&0x02 != 0
		s.SizeIndicated = cmd&0x01 != 0
		if s.Expedited {
			n := expeditedMax
			if s.SizeIndicated {
				n -= int(cmd >> 2 & 0x03)
			}
			s.Size = uint32(n)
			s.Data = b[4 : 4+n]
			break
		}
		s.Size = binary.LittleEndian.Uint32(b[4:])
		data := b[SDOHeaderLen:]
		if s.SizeIndicated && uint32(len(data)) > s.Size {
			data = data[:s.Size]
		}
		s.Data = data
	}
	return s, nil
}

// Len returns how many bytes Encode writes for s.
func (s *SDO) Len(request bool) (int, error) {
	l, err := sdoLayout(request, s.Specifier)
	if err != nil {
		return 0, err
	}
	switch l {
	case layoutSegmentData:
		return 1 + max(len(s.Data), segmentMinData), nil
	case layoutSegmentBare:
		return 1 + segmentMinData, nil
	case layoutInitiateData:
		if s.Expedited {
			if len(s.Data) > expeditedMax || !s.SizeIndicated && len(s.Data) != expeditedMax {
				return 0, fmt.Errorf("%w: expedited transfer of %d bytes", ErrBadSDO, len(s.Data))
			}
			return SDOHeaderLen, nil
		}
		return SDOHeaderLen + len(s.Data), nil
	}
	return SDOHeaderLen, nil
}

// Encode writes s into b (the bytes after the CoE header) and returns how
// many bytes it wrote. An expedited transfer takes its size from Data.
func (s *SDO) Encode(b []byte, request bool) (int, error) {
	n, err := s.Len(request)
	if err != nil {
		return 0, err
	}
	if len(b) < n {
		return 0, fmt.Errorf("sdo: %d bytes do not fit in %d: %w", n, len(b), ErrShort)
	}
	clear(b[:n])
	l, _ := sdoLayout(request, s.Specifier)
	cmd := byte(s.Specifier) << 5
	switch l {
	case layoutSegmentData, layoutSegmentBare:
		if s.Toggle {
			cmd |= 0x10
		}
		if l == layoutSegmentData {
			if s.Last {
				cmd |= 0x01
			}
			if len(s.Data) < segmentMinData {
				cmd |= byte(segmentMinData-len(s.Data)) << 1
			}
			copy(b[1:], s.Data)
		}
		b[0] = cmd
		return n, nil
	}
	binary.LittleEndian.PutUint16(b[1:], s.Index)
	b[3] = s.SubIndex
	if s.Complete && l != layoutAbort {
		cmd |= 0x10
	}
	switch l {
	case layoutAbort:
		binary.LittleEndian.PutUint32(b[4:], uint32(s.Abort))
	case layoutInitiateData:
		if s.SizeIndicated {
			cmd |= 0x01
		}
		if s.Expedited {
			cmd |= 0x02
			if s.SizeIndicated {
				cmd |= byte(expeditedMax-len(s.Data)) << 2
			}
			copy(b[4:8], s.Data)
			break
		}
		binary.LittleEndian.PutUint32(b[4:], s.Size)
		copy(b[SDOHeaderLen:], s.Data)
	}
	b[0] = cmd
	return n, nil
}

// EncodeMessage writes a whole CoE SDO mailbox message into b: mailbox
// header (with counter), CoE header (SDO request or response) and s. It
// returns the message's length.
func EncodeMessage(b []byte, counter uint8, request bool, s *SDO) (int, error) {
	if len(b) < MailboxHeaderLen+HeaderLen {
		return 0, fmt.Errorf("sdo message: %w", ErrShort)
	}
	n, err := s.Encode(b[MailboxHeaderLen+HeaderLen:], request)
	if err != nil {
		return 0, err
	}
	service := ServiceSDOResponse
	if request {
		service = ServiceSDORequest
	}
	MailboxHeader{Length: uint16(HeaderLen + n), Type: TypeCoE, Counter: counter}.Encode(b)
	Header{Service: service}.Encode(b[MailboxHeaderLen:])
	return MailboxHeaderLen + HeaderLen + n, nil
}

// Message is a decoded mailbox message. Which parts are set depends on
// Mailbox.Type and CoE.Service: SDO for SDO requests and responses,
// Emergency for emergencies, Info and InfoData for SDO information
// messages, MailboxError for a mailbox error reply.
type Message struct {
	Mailbox      MailboxHeader
	Data         []byte // the mailbox data after the header, Mailbox.Length bytes
	CoE          Header
	SDO          SDO
	Emergency    Emergency
	Info         InfoHeader
	InfoData     []byte // SDO information data after its header
	MailboxError uint16
}

// Decode reads a mailbox message from b (a mailbox SyncManager's area or a
// captured datagram's data; bytes after the announced length are
// ignored). Parts it does not know (other protocols, PDO services) are
// left in Data. It never panics on malformed input.
func Decode(b []byte) (Message, error) {
	h, err := DecodeMailboxHeader(b)
	if err != nil {
		return Message{}, err
	}
	if int(h.Length) > len(b)-MailboxHeaderLen {
		return Message{}, fmt.Errorf("mailbox announces %d bytes, has %d: %w", h.Length, len(b)-MailboxHeaderLen, ErrShort)
	}
	m := Message{Mailbox: h, Data: b[MailboxHeaderLen : MailboxHeaderLen+int(h.Length)]}
	switch h.Type {
	case TypeError:
		if len(m.Data) < 4 {
			return Message{}, fmt.Errorf("mailbox error reply: %w", ErrShort)
		}
		m.MailboxError = binary.LittleEndian.Uint16(m.Data[2:])
	case TypeCoE:
		if m.CoE, err = DecodeHeader(m.Data); err != nil {
			return Message{}, err
		}
		body := m.Data[HeaderLen:]
		switch m.CoE.Service {
		case ServiceSDORequest, ServiceSDOResponse:
			if m.SDO, err = DecodeSDO(body, m.CoE.Service == ServiceSDORequest); err != nil {
				return Message{}, err
			}
		case ServiceEmergency:
			if m.Emergency, err = DecodeEmergency(body); err != nil {
				return Message{}, err
			}
		case ServiceSDOInfo:
			if m.Info, err = DecodeInfoHeader(body); err != nil {
				return Message{}, err
			}
			m.InfoData = body[InfoHeaderLen:]
		}
	}
	return m, nil
}

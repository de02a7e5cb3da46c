package coe

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// InfoHeaderLen is the size of the SDO information header that follows the
// CoE header: op code with the incomplete flag, a reserved byte and the
// number of fragments still to come.
const InfoHeaderLen = 4

// InfoOpCode is the operation of an SDO information message.
type InfoOpCode uint8

// SDO information op codes (ETG.1000.6, SDO information service).
const (
	InfoListRequest   InfoOpCode = 0x01 // get OD list request
	InfoListResponse  InfoOpCode = 0x02 // get OD list response
	InfoObjectRequest InfoOpCode = 0x03 // get object description request
	InfoObjectReply   InfoOpCode = 0x04 // get object description response
	InfoEntryRequest  InfoOpCode = 0x05 // get entry description request
	InfoEntryReply    InfoOpCode = 0x06 // get entry description response
	InfoErrorRequest  InfoOpCode = 0x07 // SDO information error: an abort code
)

// String names the op code.
func (o InfoOpCode) String() string {
	switch o {
	case InfoListRequest:
		return "get OD list request"
	case InfoListResponse:
		return "get OD list response"
	case InfoObjectRequest:
		return "get object description request"
	case InfoObjectReply:
		return "get object description response"
	case InfoEntryRequest:
		return "get entry description request"
	case InfoEntryReply:
		return "get entry description response"
	case InfoErrorRequest:
		return "SDO information error"
	}
	return fmt.Sprintf("op code %#02x", uint8(o))
}

// ListAll is the OD list type that lists every object of the dictionary.
const ListAll uint16 = 0x01

// InfoHeader is the header of an SDO information message. A response too
// long for one mailbox message comes in fragments: every fragment but the
// last is Incomplete, and FragmentsLeft counts down to 0.
type InfoHeader struct {
	OpCode        InfoOpCode
	Incomplete    bool
	FragmentsLeft uint16
}

// Encode writes h into b (at least InfoHeaderLen bytes).
func (h InfoHeader) Encode(b []byte) {
	b[0] = uint8(h.OpCode) & 0x7F
	if h.Incomplete {
		b[0] |= 0x80
	}
	b[1] = 0
	binary.LittleEndian.PutUint16(b[2:], h.FragmentsLeft)
}

// DecodeInfoHeader reads an SDO information header from b (the bytes after
// the CoE header).
func DecodeInfoHeader(b []byte) (InfoHeader, error) {
	if len(b) < InfoHeaderLen {
		return InfoHeader{}, fmt.Errorf("sdo information header: %w", ErrShort)
	}
	return InfoHeader{OpCode: InfoOpCode(b[0] & 0x7F), Incomplete: b[0]&0x80 != 0,
		FragmentsLeft: binary.LittleEndian.Uint16(b[2:])}, nil
}

// ObjectCode is the kind of an object (CiA 301 object code).
type ObjectCode uint8

// Object codes.
const (
	ObjectVar    ObjectCode = 0x07 // a single value
	ObjectArray  ObjectCode = 0x08 // sub-indexes of one data type
	ObjectRecord ObjectCode = 0x09 // sub-indexes of different data types
)

// String names the object code.
func (c ObjectCode) String() string {
	switch c {
	case ObjectVar:
		return "VAR"
	case ObjectArray:
		return "ARRAY"
	case ObjectRecord:
		return "RECORD"
	}
	return fmt.Sprintf("%#02x", uint8(c))
}

// DataType is a CoE data type index (ETG.1000.6, data types).
type DataType uint16

// String names the data type as ETG.1000.6 spells it, or gives its number.
func (t DataType) String() string {
	if int(t) < len(dataTypeNames) && dataTypeNames[t] != "" {
		return dataTypeNames[t]
	}
	return fmt.Sprintf("%#04x", uint16(t))
}

// dataTypeNames are the names of the basic data types 0x0001..0x001B
// the standard record structures 0x0020..0x0023 and the bit fields
// 0x0030..0x0037.
var dataTypeNames = [...]string{
	0x01: "BOOLEAN", 0x02: "INTEGER8", 0x03: "INTEGER16", 0x04: "INTEGER32",
	0x05: "UNSIGNED8", 0x06: "UNSIGNED16", 0x07: "UNSIGNED32", 0x08: "REAL32",
	0x09: "VISIBLE_STRING", 0x0A: "OCTET_STRING", 0x0B: "UNICODE_STRING",
	0x0C: "TIME_OF_DAY", 0x0D: "TIME_DIFFERENCE", 0x0F: "DOMAIN",
	0x10: "INTEGER24", 0x11: "REAL64", 0x12: "INTEGER40", 0x13: "INTEGER48",
	0x14: "INTEGER56", 0x15: "INTEGER64", 0x16: "UNSIGNED24", 0x18: "UNSIGNED40",
	0x19: "UNSIGNED48", 0x1A: "UNSIGNED56", 0x1B: "UNSIGNED64",
	0x20: "PDO_COMMUNICATION_PARAMETER", 0x21: "PDO_MAPPING", 0x22: "SDO_PARAMETER", 0x23: "IDENTITY",
	0x30: "BIT1", 0x31: "BIT2", 0x32: "BIT3", 0x33: "BIT4", 0x34: "BIT5", 0x35: "BIT6", 0x36: "BIT7", 0x37: "BIT8",
}

// Access is the access word of an entry description: read and write
// permission per state, PDO mappability, backup and settings flags.
type Access uint16

// Access bits.
const (
	AccessReadPreOp   Access = 1 << 0
	AccessReadSafeOp  Access = 1 << 1
	AccessReadOp      Access = 1 << 2
	AccessWritePreOp  Access = 1 << 3
	AccessWriteSafeOp Access = 1 << 4
	AccessWriteOp     Access = 1 << 5
	AccessRxPDO       Access = 1 << 6 // mappable into an RxPDO
	AccessTxPDO       Access = 1 << 7 // mappable into a TxPDO
	AccessBackup      Access = 1 << 8
	AccessSettings    Access = 1 << 9
	// AccessRead is readable in every state with a mailbox.
	AccessRead = AccessReadPreOp | AccessReadSafeOp | AccessReadOp
	// AccessWrite is writable in every state with a mailbox.
	AccessWrite = AccessWritePreOp | AccessWriteSafeOp | AccessWriteOp
)

// String shows the read and write permissions in PREOP, SAFEOP and OP as
// three pairs ("rwrwrw" writable everywhere, "rwr-r-" writable in PREOP
// only), followed by the mappability (" RxPDO", " TxPDO").
func (a Access) String() string {
	b := []byte("------")
	for i, bit := range [3]Access{AccessReadPreOp, AccessReadSafeOp, AccessReadOp} {
		if a&bit != 0 {
			b[2*i] = 'r'
		}
		if a&(bit<<3) != 0 {
			b[2*i+1] = 'w'
		}
	}
	s := string(b)
	if a&AccessRxPDO != 0 {
		s += " RxPDO"
	}
	if a&AccessTxPDO != 0 {
		s += " TxPDO"
	}
	return s
}

// objectDescriptionLen is the fixed part of an object description: index,
// data type, max sub-index, object code.
const objectDescriptionLen = 6

// ObjectDescription describes one object (get object description
// response).
type ObjectDescription struct {
	Index       uint16
	DataType    DataType
	MaxSubIndex uint8
	ObjectCode  ObjectCode
	Name        string
}

// entryDescriptionLen is the fixed part of an entry description: index,
// sub-index, value info, data type, bit length, access.
const entryDescriptionLen = 10

// EntryDescription describes one sub-index of an object (get entry
// description response). ValueInfo echoes the request's value info; the
// simulator and this master ask for no unit, default, minimum or maximum,
// so the rest of the data is the name.
type EntryDescription struct {
	Index     uint16
	SubIndex  uint8
	ValueInfo uint8
	DataType  DataType
	BitLength uint16
	Access    Access
	Name      string
}

// Value info bits of a get entry description request: which optional
// fields the response carries in front of the name.
const (
	ValueInfoUnit    uint8 = 0x08
	ValueInfoDefault uint8 = 0x10
	ValueInfoMinimum uint8 = 0x20
	ValueInfoMaximum uint8 = 0x40
)

// encodeInfo writes the mailbox, CoE and SDO information headers in front
// of n bytes of body already at b[InfoMessageHeaderLen:].
func encodeInfo(b []byte, counter uint8, h InfoHeader, n int) int {
	MailboxHeader{Length: uint16(HeaderLen + InfoHeaderLen + n), Type: TypeCoE, Counter: counter}.Encode(b)
	Header{Service: ServiceSDOInfo}.Encode(b[MailboxHeaderLen:])
	h.Encode(b[MailboxHeaderLen+HeaderLen:])
	return InfoMessageHeaderLen + n
}

// InfoMessageHeaderLen is the size of all headers in front of an SDO
// information message's data: mailbox, CoE and SDO information header.
const InfoMessageHeaderLen = MailboxHeaderLen + HeaderLen + InfoHeaderLen

// EncodeInfoRequest writes an SDO information request into b and returns
// its length: op must be InfoListRequest (arg is the list type),
// InfoObjectRequest (arg is the index) or InfoEntryRequest (arg is the
// index, sub the sub-index; no value info is requested).
func EncodeInfoRequest(b []byte, counter uint8, op InfoOpCode, arg uint16, sub uint8) (int, error) {
	body := 2
	switch op {
	case InfoListRequest, InfoObjectRequest:
	case InfoEntryRequest:
		body = 4
	default:
		return 0, fmt.Errorf("%w: %v is not an SDO information request", ErrBadSDO, op)
	}
	if len(b) < InfoMessageHeaderLen+body {
		return 0, fmt.Errorf("sdo information request: %w", ErrShort)
	}
	d := b[InfoMessageHeaderLen:]
	binary.LittleEndian.PutUint16(d, arg)
	if op == InfoEntryRequest {
		d[2], d[3] = sub, 0
	}
	return encodeInfo(b, counter, InfoHeader{OpCode: op}, body), nil
}

// EncodeInfoFragment writes one SDO information response message into b:
// the headers (h) and data, which the caller has cut to fit. It returns
// the message's length.
func EncodeInfoFragment(b []byte, counter uint8, h InfoHeader, data []byte) (int, error) {
	if len(b) < InfoMessageHeaderLen+len(data) {
		return 0, fmt.Errorf("sdo information fragment of %d bytes: %w", len(data), ErrShort)
	}
	copy(b[InfoMessageHeaderLen:], data)
	return encodeInfo(b, counter, h, len(data)), nil
}

// AppendObjectDescription appends the data of a get object description
// response for o to dst.
func AppendObjectDescription(dst []byte, o ObjectDescription) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, o.Index)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(o.DataType))
	dst = append(dst, o.MaxSubIndex, uint8(o.ObjectCode))
	return append(dst, o.Name...)
}

// DecodeObjectDescription reads the data of a get object description
// response (after the SDO information header, fragments joined).
func DecodeObjectDescription(b []byte) (ObjectDescription, error) {
	if len(b) < objectDescriptionLen {
		return ObjectDescription{}, fmt.Errorf("object description: %w", ErrShort)
	}
	return ObjectDescription{
		Index:       binary.LittleEndian.Uint16(b),
		DataType:    DataType(binary.LittleEndian.Uint16(b[2:])),
		MaxSubIndex: b[4],
		ObjectCode:  ObjectCode(b[5] & 0x0F),
		Name:        string(b[objectDescriptionLen:]),
	}, nil
}

// AppendEntryDescription appends the data of a get entry description
// response for e (value info 0: the name follows the fixed part) to dst.
func AppendEntryDescription(dst []byte, e EntryDescription) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, e.Index)
	dst = append(dst, e.SubIndex, e.ValueInfo)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(e.DataType))
	dst = binary.LittleEndian.AppendUint16(dst, e.BitLength)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(e.Access))
	return append(dst, e.Name...)
}

// DecodeEntryDescription reads the data of a get entry description
// response. Optional value info fields (unit, default, minimum, maximum)
// are not separated from the name: a response that carries them (the
// master never asks for them) gives them as part of Name.
func DecodeEntryDescription(b []byte) (EntryDescription, error) {
	if len(b) < entryDescriptionLen {
		return EntryDescription{}, fmt.Errorf("entry description: %w", ErrShort)
	}
	return EntryDescription{
		Index:     binary.LittleEndian.Uint16(b),
		SubIndex:  b[2],
		ValueInfo: b[3],
		DataType:  DataType(binary.LittleEndian.Uint16(b[4:])),
		BitLength: binary.LittleEndian.Uint16(b[6:]),
		Access:    Access(binary.LittleEndian.Uint16(b[8:])),
		Name:      string(b[entryDescriptionLen:]),
	}, nil
}

// AppendODList appends the data of a get OD list response (list type,
// then the indexes) to dst.
func AppendODList(dst []byte, listType uint16, indexes []uint16) []byte {
	dst = binary.LittleEndian.AppendUint16(dst, listType)
	for _, i := range indexes {
		dst = binary.LittleEndian.AppendUint16(dst, i)
	}
	return dst
}

// DecodeODList reads the data of a get OD list response (fragments
// joined): the list type and the indexes, appended to dst. It allocates at
// most what the data holds; an odd trailing byte is an error.
func DecodeODList(b []byte, dst []uint16) (listType uint16, indexes []uint16, err error) {
	if len(b) < 2 {
		return 0, dst, fmt.Errorf("OD list: %w", ErrShort)
	}
	if len(b)%2 != 0 {
		return 0, dst, fmt.Errorf("%w: OD list of %d bytes", ErrBadSDO, len(b))
	}
	listType = binary.LittleEndian.Uint16(b)
	dst = slices.Grow(dst, (len(b)-2)/2)
	for i := 2; i+1 < len(b); i += 2 {
		dst = append(dst, binary.LittleEndian.Uint16(b[i:]))
	}
	return listType, dst, nil
}

// DecodeInfoError reads the abort code of an SDO information error
// (after the SDO information header).
func DecodeInfoError(b []byte) (AbortCode, error) {
	if len(b) < 4 {
		return 0, fmt.Errorf("sdo information error: %w", ErrShort)
	}
	return AbortCode(binary.LittleEndian.Uint32(b)), nil
}

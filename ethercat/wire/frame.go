package wire

import (
	"encoding/binary"
	"errors"
)

// Sizes and limits of the frame format.
const (
	// EtherType is the Ethernet type of EtherCAT frames.
	EtherType = 0x88A4
	// EthernetHeaderLen is the size of the destination, source and type fields.
	EthernetHeaderLen = 14
	// HeaderLen is the size of the EtherCAT header that follows the Ethernet header.
	HeaderLen = 2
	// DatagramHeaderLen is the size of a datagram header (command to IRQ).
	DatagramHeaderLen = 10
	// WKCLen is the size of the working counter that trails a datagram's data.
	WKCLen = 2
	// DatagramOverhead is a datagram's size beyond its data.
	DatagramOverhead = DatagramHeaderLen + WKCLen
	// MinFrameLen is the minimum Ethernet frame length without FCS; shorter
	// frames are padded with zeros.
	MinFrameLen = 60
	// MaxFrameLen is the largest untagged Ethernet frame without FCS.
	MaxFrameLen = 1514
	// MaxPayloadLen is the largest EtherCAT payload (the datagrams) in one frame.
	MaxPayloadLen = MaxFrameLen - EthernetHeaderLen - HeaderLen
	// MaxDataLen is the largest data field of a single datagram.
	MaxDataLen = MaxPayloadLen - DatagramOverhead
	// TypeDLPDU is the EtherCAT header type for datagrams (the only type a
	// segment processes).
	TypeDLPDU = 1
)

// Offsets into the Ethernet header.
const (
	offDst       = 0
	offSrc       = 6
	offEtherType = 12
)

const (
	lenMask         = 0x07FF
	circulatingFlag = 0x4000
	moreFlag        = 0x8000
	vlanTPID        = 0x8100
	qinqTPID        = 0x88A8
)

// Decoding errors. They are fixed values so decoding never allocates, also
// on bad input; [DatagramIter.Offset] tells where a datagram error was found.
var (
	ErrShortFrame      = errors.New("wire: frame shorter than Ethernet and EtherCAT headers")
	ErrNotEtherCAT     = errors.New("wire: EtherType is not 0x88A4")
	ErrUnsupportedType = errors.New("wire: EtherCAT header type is not 1 (datagrams)")
	ErrHeaderLength    = errors.New("wire: EtherCAT header length exceeds the frame")
	ErrDatagramHeader  = errors.New("wire: datagram header truncated")
	ErrDatagramOverrun = errors.New("wire: datagram length overruns the frame")
	ErrNoDatagram      = errors.New("wire: frame holds no datagram")
	ErrBufferTooSmall  = errors.New("wire: buffer too small")
	ErrDataTooLong     = errors.New("wire: datagram data exceeds the frame")
	ErrFrameFull       = errors.New("wire: datagram does not fit in the frame")
)

// ReturnedBit is the bit of a frame's first source address byte that an
// ESC's port 0 sets in every frame it sends back to the master (the
// locally administered bit, 0x02; ET1100 datasheet, "Frame processing":
// the source MAC is modified on port 0). See FromSegment.
const ReturnedBit = 0x02

// FromSegment reports whether a frame with source address src can have
// come back from the segment of a master whose address is own: the same
// six bytes, ReturnedBit of the first either way. The master takes no
// other frame for an answer, and a raw socket's kernel filter
// (link.Config.OwnFramesOnly) applies the same rule.
func FromSegment(src, own []byte) bool {
	return len(src) == 6 && len(own) == 6 && src[0]|ReturnedBit == own[0]|ReturnedBit && string(src[1:6]) == string(own[1:6])
}

// Header is the two-byte EtherCAT header: payload length and type.
type Header struct {
	Length uint16 // bytes of datagrams that follow (11 bits)
	Type   uint8  // 1 for datagrams
}

// DecodeHeader reads an EtherCAT header from the first two bytes of b.
func DecodeHeader(b []byte) Header {
	v := binary.LittleEndian.Uint16(b)
	return Header{Length: v & lenMask, Type: uint8(v >> 12)}
}

// Encode writes h into the first two bytes of b.
func (h Header) Encode(b []byte) {
	binary.LittleEndian.PutUint16(b, h.Length&lenMask|uint16(h.Type&0xF)<<12)
}

// Frame is a decoded EtherCAT frame. Its slices alias the buffer given to
// [Frame.Decode]; the Frame is valid as long as that buffer is not reused.
type Frame struct {
	buf        []byte
	headerOff  int
	payloadOff int
	Header     Header
}

// Decode checks the Ethernet header (VLAN tags are skipped) and the EtherCAT
// header of b and prepares the datagrams for iteration. It does not allocate.
func (f *Frame) Decode(b []byte) error {
	*f = Frame{}
	if len(b) < EthernetHeaderLen+HeaderLen {
		return ErrShortFrame
	}
	off := offEtherType
	et := binary.BigEndian.Uint16(b[off:])
	for et == vlanTPID || et == qinqTPID {
		off += 4
		if len(b) < off+2+HeaderLen {
			return ErrShortFrame
		}
		et = binary.BigEndian.Uint16(b[off:])
	}
	if et != EtherType {
		return ErrNotEtherCAT
	}
	off += 2
	h := DecodeHeader(b[off:])
	if h.Type != TypeDLPDU {
		return ErrUnsupportedType
	}
	if int(h.Length) > len(b)-off-HeaderLen {
		return ErrHeaderLength
	}
	f.buf, f.headerOff, f.payloadOff, f.Header = b, off, off+HeaderLen, h
	return nil
}

// Bytes returns the whole frame buffer given to Decode.
func (f *Frame) Bytes() []byte { return f.buf }

// Destination returns the destination MAC address (aliasing the frame).
func (f *Frame) Destination() []byte { return f.buf[offDst : offDst+6] }

// Source returns the source MAC address (aliasing the frame).
func (f *Frame) Source() []byte { return f.buf[offSrc : offSrc+6] }

// Payload returns the datagram area as announced by the EtherCAT header.
func (f *Frame) Payload() []byte { return f.buf[f.payloadOff : f.payloadOff+int(f.Header.Length)] }

// Datagrams returns an iterator over the frame's datagrams.
func (f *Frame) Datagrams() DatagramIter {
	return DatagramIter{buf: f.buf, off: f.payloadOff, end: f.payloadOff + int(f.Header.Length)}
}

// Datagram is one decoded datagram. Data and the underlying header alias the
// frame buffer: changing Data changes the frame, which is how a slave (or
// the simulator) answers in place.
type Datagram struct {
	Command     Command
	Index       uint8
	Address     uint32 // ADP|ADO<<16 for physical commands, logical address otherwise
	Circulating bool
	More        bool // another datagram follows
	IRQ         uint16
	WKC         uint16
	Data        []byte
	raw         []byte // header, data and working counter
}

// ADP returns the slave address half of the address field.
func (d *Datagram) ADP() uint16 { return ADP(d.Address) }

// ADO returns the register offset half of the address field.
func (d *Datagram) ADO() uint16 { return ADO(d.Address) }

// Len returns the datagram's size on the wire, header and working counter included.
func (d *Datagram) Len() int { return len(d.raw) }

// SetWKC stores w as the working counter, in the frame and in d.
func (d *Datagram) SetWKC(w uint16) {
	d.WKC = w
	binary.LittleEndian.PutUint16(d.raw[len(d.raw)-WKCLen:], w)
}

// SetAddress stores a as the address field, in the frame and in d (slaves
// increment ADP of auto-increment commands as the frame passes).
func (d *Datagram) SetAddress(a uint32) {
	d.Address = a
	binary.LittleEndian.PutUint32(d.raw[2:], a)
}

// SetIRQ stores v as the IRQ field, in the frame and in d.
func (d *Datagram) SetIRQ(v uint16) {
	d.IRQ = v
	binary.LittleEndian.PutUint16(d.raw[8:], v)
}

// SetCirculating sets or clears the circulating bit, in the frame and in d.
func (d *Datagram) SetCirculating(on bool) {
	d.Circulating = on
	v := binary.LittleEndian.Uint16(d.raw[6:])
	if on {
		v |= circulatingFlag
	} else {
		v &^= circulatingFlag
	}
	binary.LittleEndian.PutUint16(d.raw[6:], v)
}

// DatagramIter walks the datagrams of a frame without allocating.
type DatagramIter struct {
	buf      []byte
	off, end int
	errOff   int
	err      error
	done     bool
}

// Next decodes the next datagram into d and reports whether there was one.
// After it returns false, Err tells whether the chain ended cleanly.
func (it *DatagramIter) Next(d *Datagram) bool {
	if it.done || it.err != nil {
		return false
	}
	if it.end-it.off < DatagramHeaderLen {
		return it.fail(ErrDatagramHeader)
	}
	b := it.buf[it.off:it.end]
	lf := binary.LittleEndian.Uint16(b[6:])
	n := int(lf & lenMask)
	total := DatagramOverhead + n
	if total > len(b) {
		return it.fail(ErrDatagramOverrun)
	}
	*d = Datagram{
		Command:     Command(b[0]),
		Index:       b[1],
		Address:     binary.LittleEndian.Uint32(b[2:]),
		Circulating: lf&circulatingFlag != 0,
		More:        lf&moreFlag != 0,
		IRQ:         binary.LittleEndian.Uint16(b[8:]),
		WKC:         binary.LittleEndian.Uint16(b[DatagramHeaderLen+n:]),
		Data:        b[DatagramHeaderLen : DatagramHeaderLen+n : DatagramHeaderLen+n],
		raw:         b[:total:total],
	}
	it.off += total
	if !d.More {
		it.done = true
	}
	return true
}

func (it *DatagramIter) fail(err error) bool {
	it.err, it.errOff = err, it.off
	return false
}

// Err returns the error that stopped the iteration, or nil if the chain
// ended with a datagram whose "more" bit was clear.
func (it *DatagramIter) Err() error { return it.err }

// Offset returns the byte offset in the frame where iteration stopped: of
// the bad datagram after an error, past the last datagram otherwise.
func (it *DatagramIter) Offset() int {
	if it.err != nil {
		return it.errOff
	}
	return it.off
}

// Validate decodes a whole frame and returns its number of datagrams. A
// frame whose header length is zero has no datagram and is an error.
func Validate(b []byte) (int, error) {
	var f Frame
	if err := f.Decode(b); err != nil {
		return 0, err
	}
	if f.Header.Length == 0 {
		return 0, ErrNoDatagram
	}
	it := f.Datagrams()
	var d Datagram
	n := 0
	for it.Next(&d) {
		n++
	}
	if it.Err() != nil {
		return 0, it.Err()
	}
	return n, nil
}

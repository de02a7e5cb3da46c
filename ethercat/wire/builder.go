package wire

import "encoding/binary"

// Builder writes an EtherCAT frame into a caller-owned buffer, one datagram
// at a time. Frames for the cyclic exchange are built once and then reused:
// the data slices returned by Append stay valid for the buffer's lifetime.
type Builder struct {
	buf     []byte
	n       int
	lastHdr int // offset of the last datagram header, -1 when none
	count   int
}

// Reset starts a new frame in buf addressed from src to dst. buf must hold
// at least the Ethernet and EtherCAT headers; its capacity bounds the frame.
func (b *Builder) Reset(buf []byte, dst, src [6]byte) error {
	if len(buf) < EthernetHeaderLen+HeaderLen {
		return ErrBufferTooSmall
	}
	if len(buf) > MaxFrameLen {
		buf = buf[:MaxFrameLen]
	}
	copy(buf[offDst:], dst[:])
	copy(buf[offSrc:], src[:])
	binary.BigEndian.PutUint16(buf[offEtherType:], EtherType)
	b.buf, b.n, b.lastHdr, b.count = buf, EthernetHeaderLen+HeaderLen, -1, 0
	b.writeHeader()
	return nil
}

// Append adds a datagram with n bytes of data, zeroed, and a zero working
// counter, and returns the data slice (aliasing the buffer) for the caller
// to fill. It returns ErrFrameFull when the datagram does not fit.
func (b *Builder) Append(cmd Command, index uint8, address uint32, n int) ([]byte, error) {
	if n < 0 || n > MaxDataLen {
		return nil, ErrDataTooLong
	}
	if b.n+DatagramOverhead+n > len(b.buf) {
		return nil, ErrFrameFull
	}
	if b.lastHdr >= 0 {
		lf := binary.LittleEndian.Uint16(b.buf[b.lastHdr+6:])
		binary.LittleEndian.PutUint16(b.buf[b.lastHdr+6:], lf|moreFlag)
	}
	h := b.buf[b.n:]
	h[0], h[1] = byte(cmd), index
	binary.LittleEndian.PutUint32(h[2:], address)
	binary.LittleEndian.PutUint16(h[6:], uint16(n))
	binary.LittleEndian.PutUint16(h[8:], 0)
	data := h[DatagramHeaderLen : DatagramHeaderLen+n : DatagramHeaderLen+n]
	clear(data)
	binary.LittleEndian.PutUint16(h[DatagramHeaderLen+n:], 0)
	b.lastHdr = b.n
	b.n += DatagramOverhead + n
	b.count++
	b.writeHeader()
	return data, nil
}

// AppendData adds a datagram carrying a copy of data.
func (b *Builder) AppendData(cmd Command, index uint8, address uint32, data []byte) error {
	d, err := b.Append(cmd, index, address, len(data))
	if err != nil {
		return err
	}
	copy(d, data)
	return nil
}

// Room returns the largest data length a further datagram could carry.
func (b *Builder) Room() int {
	r := len(b.buf) - b.n - DatagramOverhead
	if r < 0 {
		return 0
	}
	return r
}

// Count returns the number of datagrams appended since Reset.
func (b *Builder) Count() int { return b.count }

// Bytes returns the frame built so far (not padded; links pad short frames).
func (b *Builder) Bytes() []byte { return b.buf[:b.n] }

func (b *Builder) writeHeader() {
	Header{Length: uint16(b.n - EthernetHeaderLen - HeaderLen), Type: TypeDLPDU}.Encode(b.buf[EthernetHeaderLen:])
}

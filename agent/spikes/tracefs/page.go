package tracefs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrPage is wrapped by every error about a ring-buffer page the package
// cannot read.
var ErrPage = errors.New("tracefs: malformed ring-buffer page")

// PageLayout is where a ring-buffer page keeps its header fields
// (events/header_page): a 64-bit time stamp at 0, the commit word (the
// length of the data, and flags for lost events) and the data.
type PageLayout struct {
	CommitOffset, CommitSize, DataOffset int
}

// DefaultPageLayout is the layout of a 64-bit kernel.
var DefaultPageLayout = PageLayout{CommitOffset: 8, CommitSize: 8, DataOffset: 16}

// ParseHeaderPage reads the text of events/header_page.
func ParseHeaderPage(text string) (PageLayout, error) {
	l := PageLayout{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		fl, err := parseField(line)
		if err != nil {
			return l, fmt.Errorf("%w: header_page: %v", ErrFormat, err)
		}
		switch fl.Name {
		case "commit":
			l.CommitOffset, l.CommitSize = fl.Offset, fl.Size
		case "data":
			l.DataOffset = fl.Offset
		}
	}
	if l.DataOffset == 0 || (l.CommitSize != 4 && l.CommitSize != 8) {
		return l, fmt.Errorf("%w: header_page: commit %d bytes at %d, data at %d", ErrFormat, l.CommitSize, l.CommitOffset, l.DataOffset)
	}
	return l, nil
}

// The ring buffer's record header: type_len in the low 5 bits, the time
// delta in the high 27 (kernel/trace/ring_buffer.c).
const (
	typePadding    = 29
	typeTimeExtend = 30
	typeTimeStamp  = 31
	tsShift        = 27
	// missedEvents and missedStored flag the commit word of a page after
	// which the writer overwrote events the reader never saw.
	missedEvents = 1 << 31
	missedStored = 1 << 30
	// absMask keeps the 59 bits an absolute time stamp record holds.
	absMask = 1<<59 - 1
)

// Missed tells whether the writer overwrote events before page (the
// ring wrapped before they were read), with the page's time stamp: the
// lost events are older than it.
func (l PageLayout) Missed(page []byte) (ts uint64, missed bool) {
	if len(page) < l.DataOffset {
		return 0, false
	}
	return binary.LittleEndian.Uint64(page), l.commit(page)&(missedEvents|missedStored) != 0
}

// commit is the page's commit word: the length of its data and the
// lost-events flags.
func (l PageLayout) commit(page []byte) uint64 {
	if l.CommitSize == 8 {
		return binary.LittleEndian.Uint64(page[l.CommitOffset:])
	}
	return uint64(binary.LittleEndian.Uint32(page[l.CommitOffset:]))
}

// Records calls fn for every event record on page, in order, with its
// time stamp (the instance's trace clock, in ns) and its data (common
// fields first; valid only during the call). Whether the writer lost
// events before the page is Missed's to say.
func (l PageLayout) Records(page []byte, fn func(ts uint64, rec []byte)) error {
	if len(page) < l.DataOffset {
		return fmt.Errorf("%w: %d bytes, shorter than its header", ErrPage, len(page))
	}
	ts := binary.LittleEndian.Uint64(page)
	size := int(l.commit(page) &^ (missedEvents | missedStored) & 0xffffffff)
	data := page[l.DataOffset:]
	if size > len(data) {
		return fmt.Errorf("%w: commit %d beyond the page's %d data bytes", ErrPage, size, len(data))
	}
	data = data[:size]
	for len(data) >= 4 {
		hdr := binary.LittleEndian.Uint32(data)
		typeLen, delta := hdr&0x1f, uint64(hdr>>5)
		switch {
		case typeLen == typePadding:
			if delta == 0 {
				return nil // the rest of the page is empty
			}
			if len(data) < 8 {
				return fmt.Errorf("%w: short padding", ErrPage)
			}
			n := int(binary.LittleEndian.Uint32(data[4:])) + 4
			if n < 8 || n > len(data) {
				return fmt.Errorf("%w: padding of %d bytes", ErrPage, n)
			}
			data = data[n:]
		case typeLen == typeTimeExtend:
			if len(data) < 8 {
				return fmt.Errorf("%w: short time extend", ErrPage)
			}
			ts += uint64(binary.LittleEndian.Uint32(data[4:]))<<tsShift | delta
			data = data[8:]
		case typeLen == typeTimeStamp:
			if len(data) < 8 {
				return fmt.Errorf("%w: short time stamp", ErrPage)
			}
			abs := (uint64(binary.LittleEndian.Uint32(data[4:]))<<tsShift | delta) & absMask
			ts = ts&^absMask | abs
			data = data[8:]
		case typeLen == 0:
			if len(data) < 8 {
				return fmt.Errorf("%w: short record", ErrPage)
			}
			n := int(binary.LittleEndian.Uint32(data[4:])) // includes this length word
			if n < 4 || 4+n > len(data) {
				return fmt.Errorf("%w: record of %d bytes", ErrPage, n)
			}
			ts += delta
			fn(ts, data[8:4+n])
			data = data[(4+n+3)&^3:]
		default:
			n := int(typeLen) * 4
			if 4+n > len(data) {
				return fmt.Errorf("%w: record of %d bytes", ErrPage, n)
			}
			ts += delta
			fn(ts, data[4:4+n])
			data = data[4+n:]
		}
	}
	return nil
}

// Uint reads the unsigned integer field f of rec (0 when rec is too
// short).
func (f Field) Uint(rec []byte) uint64 {
	if f.Offset < 0 || f.Offset+f.Size > len(rec) {
		return 0
	}
	b := rec[f.Offset:]
	switch f.Size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// Int reads the integer field f of rec, sign-extended when f is signed.
func (f Field) Int(rec []byte) int64 {
	v := f.Uint(rec)
	if !f.Signed {
		return int64(v)
	}
	switch f.Size {
	case 1:
		return int64(int8(v))
	case 2:
		return int64(int16(v))
	case 4:
		return int64(int32(v))
	}
	return int64(v)
}

// Bytes returns the bytes of a string field of rec: a fixed array
// (char comm[16]) up to its first NUL, or a __data_loc string. The
// slice aliases rec.
func (f Field) Bytes(rec []byte) []byte {
	off, n := f.Offset, f.Size
	if f.Offset < 0 || n == 0 {
		return nil
	}
	if f.DataLoc {
		if f.Offset+4 > len(rec) {
			return nil
		}
		loc := binary.LittleEndian.Uint32(rec[f.Offset:])
		off, n = int(loc&0xffff), int(loc>>16)
	}
	if off < 0 || off+n > len(rec) {
		return nil
	}
	b := rec[off : off+n]
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// String is a compact description of f, for errors.
func (f Field) String() string {
	return f.Name + "@" + strconv.Itoa(f.Offset) + "/" + strconv.Itoa(f.Size)
}

package etgxml

import (
	"bufio"
	"fmt"
	"io"
	"os"
)

// Encoding is how a file's bytes become the UTF-8 the decoder reads.
type Encoding uint8

// The encodings a file may be in.
const (
	UTF8 Encoding = iota + 1
	UTF16LE
	UTF16BE
	Windows1252 // and ISO-8859-1, ASCII
)

// Location is where a streamed element starts in its file, so that it can
// be read again alone (OpenAt), without the file before it.
type Location struct {
	Encoding Encoding
	Raw      int64 // a byte offset in the file at or before the element, where decoding may start
	Skip     int64 // the decoded bytes from Raw to the element's start tag
	Line     int   // the line of the start tag's '<' in the file
}

// checkpoints is how many recent (decoded, raw) pairs positions keeps:
// enough to reach back over the decoder's read-ahead (4 KiB) and the
// converters' buffers (up to 3 KiB out of each 1 KiB in).
const checkpoints = 64

// positions tracks where decoded bytes come from in the raw input: for
// UTF-8 the offsets differ by the byte-order mark only; a converter marks
// a checkpoint at the start of each chunk it converts.
type positions struct {
	enc   Encoding
	bom   int64 // raw bytes before the decoded text
	ring  [checkpoints][2]int64
	next  int
	count int
}

// mark records that decoded offset dec comes from raw offset raw. A nil
// positions tracks nothing.
func (p *positions) mark(dec, raw int64) {
	if p == nil {
		return
	}
	p.ring[p.next] = [2]int64{dec, raw}
	p.next = (p.next + 1) % checkpoints
	p.count = min(p.count+1, checkpoints)
}

// locate returns the location of decoded offset dec, false when it lies
// before the checkpoints kept.
func (p *positions) locate(dec int64) (Location, bool) {
	if p.count == 0 || p.enc == UTF8 {
		return Location{Encoding: UTF8, Raw: dec + p.bom}, p.enc == UTF8
	}
	best, found := [2]int64{}, false
	for i := range p.count {
		c := p.ring[i]
		if c[0] <= dec && (!found || c[0] > best[0]) {
			best, found = c, true
		}
	}
	return Location{Encoding: p.enc, Raw: best[1], Skip: dec - best[0]}, found
}

// Location returns where e, an element Next returned, starts in the
// input; false when it cannot be told (e was not streamed, or lies
// further back than the positions kept).
func (r *Reader) Location(e *Element) (Location, bool) {
	if e.index == 0 {
		return Location{}, false
	}
	loc, ok := r.pos.locate(e.offset)
	loc.Line = e.startLine
	return loc, ok
}

// OpenAt opens the file at path for reading the element at loc alone: the
// reader it returns yields UTF-8 from the element's start tag on, for a
// Reader whose Root is that element (the rest of the file follows it and
// is not to be read), told the element's line with StartsAtLine.
func OpenAt(path string, loc Location) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	r, err := ReadAt(f, loc)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, nil
}

// ReadAt positions rs, the input a Reader read, at the element at loc and
// returns a reader that yields UTF-8 from the element's start tag on (see
// OpenAt).
func ReadAt(rs io.ReadSeeker, loc Location) (io.Reader, error) {
	if _, err := rs.Seek(loc.Raw, io.SeekStart); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(rs, 16<<10)
	var r io.Reader = br
	switch loc.Encoding {
	case UTF16LE, UTF16BE:
		r = &utf16Reader{r: br, little: loc.Encoding == UTF16LE}
	case Windows1252:
		r = &windows1252{r: br}
	}
	if _, err := io.CopyN(io.Discard, r, loc.Skip); err != nil {
		return nil, fmt.Errorf("the element is no longer at offset %d: %w", loc.Raw, err)
	}
	return r, nil
}

package etgxml

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// sizeGuard passes at most max bytes of r and fails with ErrTooLarge on
// the first byte past them, so that a file longer than the limit is
// refused however it arrives (a pipe, a file growing while read).
type sizeGuard struct {
	r    io.Reader
	left int64
	max  int64
}

func (g *sizeGuard) Read(p []byte) (int, error) {
	if g.left <= 0 {
		var one [1]byte
		n, err := g.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w of %d bytes", ErrTooLarge, g.max)
		}
		return 0, err
	}
	if int64(len(p)) > g.left {
		p = p[:g.left]
	}
	n, err := g.r.Read(p)
	g.left -= int64(n)
	return n, err
}

// prepare wraps r with the size guard and turns a byte-order-marked or
// UTF-16 input into UTF-8 (without the mark), the form the decoder reads;
// the positions it returns track where the decoded bytes come from.
func prepare(r io.Reader, max int64) (io.Reader, *positions) {
	br := bufio.NewReaderSize(&sizeGuard{r: r, left: max, max: max}, 64<<10)
	head, _ := br.Peek(4)
	p := &positions{enc: UTF8}
	switch {
	case bytes.HasPrefix(head, []byte{0xEF, 0xBB, 0xBF}):
		_, _ = br.Discard(3)
		p.bom = 3
		return br, p
	case bytes.HasPrefix(head, []byte{0xFF, 0xFE}):
		_, _ = br.Discard(2)
		p.enc, p.bom = UTF16LE, 2
	case bytes.HasPrefix(head, []byte{0xFE, 0xFF}):
		_, _ = br.Discard(2)
		p.enc, p.bom = UTF16BE, 2
	case bytes.Equal(head, []byte{'<', 0, '?', 0}):
		p.enc = UTF16LE
	case bytes.Equal(head, []byte{0, '<', 0, '?'}):
		p.enc = UTF16BE
	default:
		return br, p
	}
	return &utf16Reader{r: br, little: p.enc == UTF16LE, pos: p, raw: p.bom}, p
}

// utf16Reader converts UTF-16 to UTF-8.
type utf16Reader struct {
	r        *bufio.Reader
	little   bool
	out      []byte // converted bytes not yet returned
	err      error
	pos      *positions // nil: not tracked
	dec, raw int64      // bytes produced and input consumed so far
}

func (u *utf16Reader) Read(p []byte) (int, error) {
	for len(u.out) == 0 && u.err == nil {
		u.fill()
	}
	if len(u.out) > 0 {
		n := copy(p, u.out)
		u.out = u.out[n:]
		return n, nil
	}
	return 0, u.err
}

// fill converts up to 2 KiB of code units.
func (u *utf16Reader) fill() {
	u.out = u.out[:0]
	u.pos.mark(u.dec, u.raw)
	defer func() { u.dec += int64(len(u.out)) }()
	for range 1024 {
		c, err := u.unit()
		if err != nil {
			u.err = err
			return
		}
		r := rune(c)
		u.raw += 2
		if utf16.IsSurrogate(r) {
			c2, err := u.unit()
			if err != nil {
				u.err = err
				return
			}
			u.raw += 2
			r = utf16.DecodeRune(r, rune(c2))
		}
		u.out = utf8.AppendRune(u.out, r)
	}
}

// unit reads one code unit; a lone last byte is an error.
func (u *utf16Reader) unit() (uint16, error) {
	var b [2]byte
	n, err := io.ReadFull(u.r, b[:])
	switch {
	case n == 1:
		return 0, fmt.Errorf("%w: UTF-16 input of an odd number of bytes", ErrEncoding)
	case err != nil:
		return 0, err
	case u.little:
		return uint16(b[0]) | uint16(b[1])<<8, nil
	}
	return uint16(b[0])<<8 | uint16(b[1]), nil
}

// charsetReader returns the decoder's CharsetReader for an input prepared
// with positions p: declared single-byte encodings are converted, a
// UTF-16 declaration is taken as is when the bytes were UTF-16. at is the
// decoder's offset when it switches, the end of the (ASCII) declaration.
func charsetReader(p *positions, at func() int64) func(string, io.Reader) (io.Reader, error) {
	return func(label string, in io.Reader) (io.Reader, error) {
		switch l := strings.ToLower(strings.TrimSpace(label)); {
		case l == "utf8":
			return in, nil
		case strings.HasPrefix(l, "utf-16") || l == "utf16" || l == "ucs-2" || l == "unicode":
			if p.enc == UTF16LE || p.enc == UTF16BE {
				return in, nil
			}
			return nil, fmt.Errorf("%w: the file declares %q but its bytes are not UTF-16 (no byte-order mark)", ErrEncoding, label)
		case isLatin(l) && p.enc == UTF8:
			p.enc = Windows1252
			dec := at()
			return &windows1252{r: in, pos: p, dec: dec, raw: dec + p.bom}, nil
		}
		return nil, fmt.Errorf("%w %q: ecagent reads UTF-8, UTF-16, ISO-8859-1 and Windows-1252", ErrEncoding, label)
	}
}

// isLatin reports whether label names ISO-8859-1, Windows-1252 or ASCII,
// all read as Windows-1252 (a superset of the other two in every byte a
// text holds, and what the WHATWG encoding standard does for them).
func isLatin(l string) bool {
	switch l {
	case "iso-8859-1", "iso8859-1", "iso_8859-1", "iso-8859-1:1987", "latin1", "latin-1", "l1",
		"ibm819", "cp819", "windows-1252", "cp1252", "x-cp1252", "us-ascii", "ascii":
		return true
	}
	return false
}

// cp1252High maps the bytes 0x80–0x9F of Windows-1252; the rest of the
// upper half maps to the same code point.
var cp1252High = [32]rune{
	0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x8D, 0x017D, 0x8F,
	0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
}

// windows1252 converts Windows-1252 (and so ISO-8859-1) to UTF-8.
type windows1252 struct {
	r        io.Reader
	buf      [1024]byte
	out      []byte
	err      error
	pos      *positions // nil: not tracked
	dec, raw int64      // bytes produced and input consumed so far, from the file's start
}

func (w *windows1252) Read(p []byte) (int, error) {
	for len(w.out) == 0 && w.err == nil {
		w.pos.mark(w.dec, w.raw)
		n, err := w.r.Read(w.buf[:])
		w.err = err
		w.out = w.out[:0]
		for _, c := range w.buf[:n] {
			switch {
			case c < 0x80:
				w.out = append(w.out, c)
			case c < 0xA0:
				w.out = utf8.AppendRune(w.out, cp1252High[c-0x80])
			default:
				w.out = utf8.AppendRune(w.out, rune(c))
			}
		}
		w.raw += int64(n)
		w.dec += int64(len(w.out))
	}
	if len(w.out) > 0 {
		n := copy(p, w.out)
		w.out = w.out[n:]
		return n, nil
	}
	return 0, w.err
}

package etgxml

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Reader walks an XML document one element at a time: Root opens the
// root element, Next returns the next child of the innermost open
// element, and the caller either streams into that child with Next,
// reads it whole with Fill, or discards it with Skip.
//
// Every token passes the limits: the input's size, the nesting depth, the
// element count, and the element count of one filled subtree
// (Limits.MaxSubtree), which bounds the memory one Fill holds.
type Reader struct {
	dec      *xml.Decoder
	file     string
	lim      Limits
	warn     *Warnings
	depth    int
	count    int
	open     []*Element       // streamed elements still open, root first
	kids     []map[string]int // per open element: same-named children seen
	charsErr error            // the CharsetReader's refusal, which the decoder wraps as text
	pos      *positions       // where the decoded bytes come from
	lineBase int              // lines of the file before the input (a Location's)
}

// StartsAtLine tells the reader that its input starts at line n of the
// file, as an input OpenAt returns does: lines in elements, errors and
// warnings are then the file's.
func (r *Reader) StartsAtLine(n int) {
	r.lineBase = max(n-1, 0)
}

// NewReader returns a reader of the document in r, named file in errors
// and warnings. maxSubtree bounds the elements of one Fill; warnings (a
// bare DOCTYPE, text where none belongs) go to w.
func NewReader(r io.Reader, file string, lim Limits, w *Warnings) *Reader {
	in, pos := prepare(r, lim.MaxBytes)
	rd := &Reader{file: file, lim: lim, warn: w, pos: pos}
	rd.dec = xml.NewDecoder(in)
	rd.dec.Strict = true
	cr := charsetReader(pos, rd.dec.InputOffset)
	rd.dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		out, err := cr(label, in)
		rd.charsErr = err
		return out, err
	}
	return rd
}

// Root reads the prolog and opens the root element, which must be named
// want.
func (r *Reader) Root(want string) (*Element, error) {
	for {
		tok, err := r.token(nil)
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: r.file, Kind: ErrSyntax, Msg: "no root element: the file is empty or holds no XML"}
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			e := r.element(t, nil)
			if e.Name != want {
				return nil, &Error{File: r.file, Line: e.Line, Col: e.Col, Path: e.Name, Kind: ErrRoot,
					Msg: fmt.Sprintf("the root element is <%s>; this file kind has <%s>", e.Name, want)}
			}
			r.push(e)
			return e, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return nil, r.errAt(nil, ErrSyntax, "text before the root element")
			}
		}
	}
}

// Next returns the next child of the innermost open element, opened, or
// nil when that element ends (it is then closed). Text between streamed
// children is not kept; text that is not white space is warned about.
func (r *Reader) Next() (*Element, error) {
	if len(r.open) == 0 {
		return nil, nil
	}
	top := r.open[len(r.open)-1]
	for {
		at := r.dec.InputOffset() // the end of the last token: a start tag's '<'
		atLine := r.line()
		tok, err := r.token(top)
		if err != nil {
			return nil, r.eof(err, top)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			e := r.element(t, top)
			m := r.kids[len(r.kids)-1]
			m[e.Name]++
			e.index = m[e.Name]
			e.offset, e.startLine = at, atLine
			r.push(e)
			return e, nil
		case xml.EndElement:
			r.pop()
			return nil, nil
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				r.warn.Add(r.file, r.line(), top.Pattern()+"/text()", "ignored: text in an element that holds elements")
			}
		}
	}
}

// Fill reads the content of e, the element Next just returned, into e:
// its text and its children, to its end tag.
func (r *Reader) Fill(e *Element) error {
	cur, n := e, 0
	for {
		tok, err := r.token(cur)
		if err != nil {
			return r.eof(err, cur)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if n++; n > r.lim.MaxSubtree {
				return r.errAt(cur, ErrTooManyElements, fmt.Sprintf("<%s> holds more than %d elements", e.Name, r.lim.MaxSubtree))
			}
			k := r.element(t, cur)
			if strings.TrimSpace(cur.text) == "" {
				cur.text = ""
			}
			cur.Kids = append(cur.Kids, k)
			cur = k
		case xml.EndElement:
			if cur == e {
				r.pop()
				return nil
			}
			cur = cur.parent
		case xml.CharData:
			if len(cur.Kids) == 0 {
				cur.text += string(t)
			}
		}
	}
}

// Skip discards the content of e, the element Next just returned.
func (r *Reader) Skip(e *Element) error {
	level := 0
	for {
		tok, err := r.token(e)
		if err != nil {
			return r.eof(err, e)
		}
		switch tok.(type) {
		case xml.StartElement:
			level++
		case xml.EndElement:
			if level == 0 {
				r.pop()
				return nil
			}
			level--
		}
	}
}

// Ignore discards e, the element Next just returned, with a warning that
// says why (the Reasons' answer for its pattern, or NotRead).
func (r *Reader) Ignore(e *Element, why Reasons) error {
	r.warn.Add(r.file, e.Line, e.Pattern(), reason(why, e.Pattern()))
	return r.Skip(e)
}

// End reads what follows the root element: comments, processing
// instructions and white space only.
func (r *Reader) End() error {
	for {
		tok, err := r.token(nil)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return r.errAt(nil, ErrSyntax, fmt.Sprintf("a second root element <%s>", t.Name.Local))
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return r.errAt(nil, ErrSyntax, "text after the root element")
			}
		}
	}
}

// token returns the next token, having applied the limits, the DOCTYPE
// rule and the error conversion; cur is the element being read, for the
// errors' path.
func (r *Reader) token(cur *Element) (xml.Token, error) {
	tok, err := r.dec.Token()
	if err != nil {
		return nil, r.convert(err, cur)
	}
	switch t := tok.(type) {
	case xml.StartElement:
		r.count++
		if r.count > r.lim.MaxElements {
			return nil, r.errAt(cur, ErrTooManyElements, fmt.Sprintf("more than %d elements", r.lim.MaxElements))
		}
		r.depth++
		if r.depth > r.lim.MaxDepth {
			return nil, r.errAt(cur, ErrTooDeep, fmt.Sprintf("<%s> nests deeper than %d elements", t.Name.Local, r.lim.MaxDepth))
		}
	case xml.EndElement:
		r.depth--
	case xml.Directive:
		if err := r.directive(t); err != nil {
			return nil, err
		}
	}
	return tok, nil
}

// directive refuses a DOCTYPE that declares anything or names an external
// DTD, and any other declaration; a bare DOCTYPE is a warning.
func (r *Reader) directive(d xml.Directive) error {
	s := string(d)
	bare := strings.HasPrefix(s, "DOCTYPE") && !strings.ContainsAny(s, "[<") &&
		!strings.Contains(s, "SYSTEM") && !strings.Contains(s, "PUBLIC")
	if bare {
		r.warn.Add(r.file, r.line(), "<!DOCTYPE>", "ignored: a document type declaration means nothing to ESI and ENI files")
		return nil
	}
	what := "a declaration"
	switch {
	case strings.Contains(s, "ENTITY"):
		what = "a DOCTYPE declaring entities (an XML bomb or an external entity)"
	case strings.Contains(s, "SYSTEM") || strings.Contains(s, "PUBLIC"):
		what = "a DOCTYPE naming an external DTD"
	case strings.HasPrefix(s, "DOCTYPE"):
		what = "a DOCTYPE with an internal subset"
	}
	return r.errAt(nil, ErrDoctype, what+" refused: ESI and ENI files have none, and nothing from it is used")
}

// convert turns a decoder error into an *Error, keeping io.EOF as is.
func (r *Reader) convert(err error, cur *Element) error {
	var se *xml.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return err
	case errors.Is(err, ErrTooLarge):
		return &Error{File: r.file, Kind: ErrTooLarge, Path: cur.Path(), Msg: "refused: " + err.Error()}
	case r.charsErr != nil:
		return &Error{File: r.file, Kind: ErrEncoding, Msg: r.charsErr.Error(), Cause: r.charsErr}
	case errors.Is(err, ErrEncoding):
		return &Error{File: r.file, Kind: ErrEncoding, Path: cur.Path(), Msg: err.Error(), Cause: err}
	case errors.As(err, &se) && se.Msg == "unexpected EOF" && cur != nil:
		return r.errAt(cur, ErrSyntax, fmt.Sprintf("the file ends inside <%s>", cur.Name))
	case errors.As(err, &se):
		return r.errAt(cur, ErrSyntax, se.Msg)
	}
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	return &Error{File: r.file, Kind: ErrSyntax, Path: cur.Path(), Msg: err.Error(), Cause: err}
}

// eof turns the end of the input inside an element into a syntax error.
func (r *Reader) eof(err error, cur *Element) error {
	if errors.Is(err, io.EOF) {
		return r.errAt(cur, ErrSyntax, fmt.Sprintf("the file ends inside <%s>", cur.Name))
	}
	return err
}

// errAt returns an error at the decoder's position inside cur.
func (r *Reader) errAt(cur *Element, kind error, msg string) *Error {
	line, col := r.dec.InputPos()
	line += r.lineBase
	return &Error{File: r.file, Line: line, Col: col, Path: cur.Path(), Kind: kind, Msg: msg}
}

// line is the decoder's current line.
func (r *Reader) line() int {
	l, _ := r.dec.InputPos()
	return l + r.lineBase
}

// element makes an element of a start tag, at the decoder's position.
func (r *Reader) element(t xml.StartElement, parent *Element) *Element {
	e := &Element{Name: t.Name.Local, parent: parent}
	e.Line, e.Col = r.dec.InputPos()
	e.Line += r.lineBase
	if len(t.Attr) > 0 {
		e.Attrs = make([]Attr, len(t.Attr))
		for i, a := range t.Attr {
			e.Attrs[i] = Attr{Name: a.Name.Local, Value: a.Value,
				Foreign: a.Name.Space != "" || a.Name.Local == "xmlns"}
		}
	}
	return e
}

func (r *Reader) push(e *Element) {
	r.open = append(r.open, e)
	r.kids = append(r.kids, map[string]int{})
}

func (r *Reader) pop() {
	r.open = r.open[:len(r.open)-1]
	r.kids = r.kids[:len(r.kids)-1]
}

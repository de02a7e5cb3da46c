package etgxml

import (
	"errors"
	"fmt"
	"strings"
)

// The kinds of error a reader returns, matched with errors.Is. Each comes
// wrapped in an *Error that says where.
var (
	// ErrTooLarge: the input is longer than Limits.MaxBytes.
	ErrTooLarge = errors.New("file larger than the limit")
	// ErrTooDeep: elements nest deeper than Limits.MaxDepth.
	ErrTooDeep = errors.New("elements nested deeper than the limit")
	// ErrTooManyElements: the input has more than Limits.MaxElements elements.
	ErrTooManyElements = errors.New("more elements than the limit")
	// ErrDoctype: a DOCTYPE declares entities or names an external DTD.
	ErrDoctype = errors.New("DOCTYPE with entity declarations or an external DTD refused")
	// ErrSyntax: the input is not well-formed XML.
	ErrSyntax = errors.New("malformed XML")
	// ErrEncoding: the input's character encoding is not one this package reads.
	ErrEncoding = errors.New("unsupported character encoding")
	// ErrRoot: the root element is not the one the file kind has.
	ErrRoot = errors.New("wrong root element")
	// ErrMissing: a required element or attribute is absent.
	ErrMissing = errors.New("required element or attribute missing")
	// ErrValue: a value is not what its element or attribute allows.
	ErrValue = errors.New("invalid value")
)

// Error is one problem in one place of a file.
type Error struct {
	File  string // the file's name as the caller gave it
	Line  int    // 1-based; 0 when unknown
	Col   int    // 1-based column of the end of the element's start tag; 0 when unknown
	Path  string // element path from the root, e.g. EtherCATConfig/Config/Slave[3](Term 3)/Info/VendorId
	Attr  string // the attribute at fault, if it is one
	Value string // the offending value, if there is one
	Msg   string // what is wrong and what is allowed
	Kind  error  // one of the Err* kinds above
	Cause error  // the underlying error, if any (strconv, io)
}

// Error renders the problem as file:line:col: path@attr: value "v": message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		if e.Attr != "" {
			b.WriteString("@" + e.Attr)
		}
		b.WriteString(": ")
	}
	if e.Value != "" || e.Kind == ErrValue {
		fmt.Fprintf(&b, "value %q: ", clip(e.Value))
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap gives errors.Is and errors.As the kind and the cause.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}

// clip shortens a value for a message.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

// maxErrors is how many problems a file's Errors keeps before it only
// counts them.
const maxErrors = 20

// Errors gathers the problems found while converting a file, so that one
// run reports every bad value of a file, not just the first.
type Errors struct {
	file    string
	list    []error
	dropped int
}

// NewErrors returns an empty gatherer for the file named file.
func NewErrors(file string) *Errors { return &Errors{file: file} }

// At records a problem at element e (nil: the file as a whole), attribute
// attr ("" for the element's text), with the offending value.
func (x *Errors) At(e *Element, attr, value string, kind error, format string, args ...any) {
	if len(x.list) >= maxErrors {
		x.dropped++
		return
	}
	err := &Error{File: x.file, Attr: attr, Value: value, Kind: kind, Msg: fmt.Sprintf(format, args...)}
	if e != nil {
		err.Line, err.Col, err.Path = e.Line, e.Col, e.Path()
	}
	x.list = append(x.list, err)
}

// AtPath records a problem at a place kept from an element that is gone:
// its line, column and path.
func (x *Errors) AtPath(line, col int, path, value string, kind error, format string, args ...any) {
	if len(x.list) >= maxErrors {
		x.dropped++
		return
	}
	x.list = append(x.list, &Error{File: x.file, Line: line, Col: col, Path: path, Value: value, Kind: kind,
		Msg: fmt.Sprintf(format, args...)})
}

// Add records an error that already says where it is.
func (x *Errors) Add(err error) {
	if len(x.list) >= maxErrors {
		x.dropped++
		return
	}
	x.list = append(x.list, err)
}

// Full reports whether as many problems are recorded as a report needs:
// a reader may stop there.
func (x *Errors) Full() bool { return len(x.list) >= maxErrors }

// Len is the number of problems recorded.
func (x *Errors) Len() int { return len(x.list) + x.dropped }

// Err returns nil, the one problem, or all of them joined (one per line),
// with a last line counting those past the first maxErrors.
func (x *Errors) Err() error {
	switch {
	case len(x.list) == 0:
		return nil
	case len(x.list) == 1 && x.dropped == 0:
		return x.list[0]
	}
	list := x.list
	if x.dropped > 0 {
		list = append(list[:len(list):len(list)], fmt.Errorf("%s: and %d more problems", x.file, x.dropped))
	}
	return errors.Join(list...)
}

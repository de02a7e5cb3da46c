package sii

import (
	"errors"
	"fmt"
)

var (
	// ErrTruncated reports an image that ends before its header, before a category's
	// data, or before the end marker.
	ErrTruncated = errors.New("sii: image truncated")

	// ErrMalformed reports a category whose content contradicts its own size, such as a
	// string or a PDO that runs past the end of its category.
	ErrMalformed = errors.New("sii: malformed category")

	// ErrOutOfRange reports a read outside an [Image].
	ErrOutOfRange = errors.New("sii: read out of range")
)

// ChecksumError reports a header whose stored CRC-8 (byte 0x0E) differs from the one
// computed over words 0x00–0x06. [Parse] returns it together with a fully parsed
// [Device]: real masters only warn about a bad checksum, so callers may log it and go on.
type ChecksumError struct {
	Want uint8 // computed over the header
	Got  uint8 // stored in the image
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("sii: header checksum %#02x, computed %#02x", e.Got, e.Want)
}

// StringIndexError reports a string index that refers past the end of the Strings
// category. Index 0 means "no string" and is never out of range.
type StringIndexError struct {
	Index uint8 // the 1-based index asked for
	Count int   // how many strings the device has
}

func (e *StringIndexError) Error() string {
	return fmt.Sprintf("string index %d out of range (%d strings)", e.Index, e.Count)
}

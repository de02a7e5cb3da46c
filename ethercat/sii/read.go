package sii

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
)

// WordReader reads an SII EEPROM. ReadWords fills dst, whose length is a multiple of 2,
// with the bytes starting at word address wordAddr. A device implementation goes through
// the ESC's EEPROM interface (registers 0x0500–0x050F), 4 or 8 bytes per access; an
// [Image] serves them from memory.
type WordReader interface {
	ReadWords(wordAddr uint16, dst []byte) error
}

// readChunk is the most Read asks of a WordReader at once, so that it sees a cancelled
// context between chunks.
const readChunk = 128

// Read fetches an SII image from r: the header, then each category header and its data
// up to the end marker, so that only the used part of the EEPROM is read (a few hundred
// bytes for most terminals, not the whole EEPROM). It returns the image up to and
// including the end marker, ready for [Parse]. It reads no byte at or beyond maxBytes (at
// most 128 KiB, what a word address reaches) and returns an error wrapping
// [ErrTruncated] when the end marker is not found before it. It checks ctx between reads.
func Read(ctx context.Context, r WordReader, maxBytes int) ([]byte, error) {
	maxBytes = min(maxBytes, maxImageBytes) &^ 1
	if maxBytes < HeaderSize+2 {
		return nil, fmt.Errorf("sii: read limit of %d bytes cannot hold a header and an end marker", maxBytes)
	}
	img := make([]byte, 0, 512)
	fill := func(to int) error {
		for len(img) < to {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("sii: reading word %#x: %w", len(img)/2, err)
			}
			n := min(to-len(img), readChunk)
			from := len(img)
			img = append(img, make([]byte, n)...)
			if err := r.ReadWords(uint16(from/2), img[from:]); err != nil {
				return fmt.Errorf("sii: reading %d bytes at word %#x: %w", n, from/2, err)
			}
		}
		return nil
	}
	le := binary.LittleEndian
	// Read each category's data together with the next category's header.
	off := HeaderSize
	if err := fill(min(off+4, maxBytes)); err != nil {
		return nil, err
	}
	for {
		t := CategoryType(le.Uint16(img[off:]))
		if t == CategoryEnd {
			return img[:off+2], nil
		}
		if off+4 > maxBytes {
			return nil, fmt.Errorf("%w: category %v at word %#x has no size word within %d bytes", ErrTruncated, t, off/2, maxBytes)
		}
		next := off + 4 + 2*int(le.Uint16(img[off+2:]))
		if next+2 > maxBytes {
			return nil, fmt.Errorf("%w: category %v at word %#x ends at byte %d, no end marker within %d bytes",
				ErrTruncated, t, off/2, next, maxBytes)
		}
		if err := fill(min(next+4, maxBytes)); err != nil {
			return nil, err
		}
		off = next
	}
}

// Image is an SII image in memory. It implements [WordReader], so a file or a model
// image can stand in for a device's EEPROM.
type Image []byte

// ReadWords copies len(dst) bytes from word address wordAddr into dst. It returns an
// error wrapping [ErrOutOfRange] when they lie beyond the image, and an error when
// len(dst) is odd. It does not allocate unless it fails.
func (im Image) ReadWords(wordAddr uint16, dst []byte) error {
	if len(dst)%2 != 0 {
		return fmt.Errorf("sii: read of %d bytes, not a whole number of words", len(dst))
	}
	from := 2 * int(wordAddr)
	if from+len(dst) > len(im) {
		return fmt.Errorf("%w: %d bytes at word %#x, image has %d bytes", ErrOutOfRange, len(dst), wordAddr, len(im))
	}
	copy(dst, im[from:])
	return nil
}

// LoadFile reads an SII image file, such as a dump made with a master's EEPROM tool.
func LoadFile(path string) (Image, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sii: %w", err)
	}
	return Image(b), nil
}

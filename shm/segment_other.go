//go:build !linux

package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
)

// Create is supported on Linux only; elsewhere use New.
func Create(path string, l Layout) (*Segment, error) {
	return nil, fmt.Errorf("shm: create %s: %w", path, errors.ErrUnsupported)
}

// CreateMemfd is supported on Linux only; elsewhere use New.
func CreateMemfd(name string, l Layout) (*Segment, error) {
	return nil, fmt.Errorf("shm: create memfd %s: %w", name, errors.ErrUnsupported)
}

// Attach is supported on Linux only.
func Attach(path string) (*Segment, error) {
	return nil, fmt.Errorf("shm: attach %s: %w", path, errors.ErrUnsupported)
}

// AttachFile is supported on Linux only.
func AttachFile(f *os.File) (*Segment, error) {
	return nil, fmt.Errorf("shm: attach %s: %w", f.Name(), errors.ErrUnsupported)
}

// randomNonce draws a segment's nonce from /dev/urandom; see the Linux
// version.
func randomNonce() uint64 {
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return fallbackNonce()
	}
	defer f.Close()
	var b [8]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return fallbackNonce()
	}
	return binary.NativeEndian.Uint64(b[:])
}

//go:build !linux

package shm

import (
	"errors"
	"fmt"
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

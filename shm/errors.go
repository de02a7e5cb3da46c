package shm

import (
	"encoding/hex"
	"errors"
	"fmt"
)

// ErrIncompatible is matched (errors.Is) by every error that says a file
// is not a segment this build can attach: ForeignError, VersionError,
// SizeError, LayoutError and StaleError. The usual answer is to stop the
// cycle process that uses it, remove it and create a new one.
var ErrIncompatible = errors.New("shm: incompatible segment")

// ForeignError reports a file that does not start with the segment magic:
// not an ecagent segment at all.
type ForeignError struct {
	Name  string  // file path or name
	Magic [8]byte // the first bytes found (fewer if the file is shorter)
}

// Error names the file and the bytes it starts with.
func (e *ForeignError) Error() string {
	return fmt.Sprintf("shm: %s is not an ecagent segment (starts with %q, want %q)", e.Name, e.Magic[:], magic[:])
}

// Is matches ErrIncompatible.
func (e *ForeignError) Is(target error) bool { return target == ErrIncompatible }

// VersionError reports a segment built with another layout version, that
// is by another ecagent version.
type VersionError struct {
	Name    string
	Segment uint32 // layout version in the segment's header
	Reader  uint32 // LayoutVersion of this build
}

// Error names both layout versions.
func (e *VersionError) Error() string {
	return fmt.Sprintf("shm: %s has layout version %d, this ecagent reads version %d: the segment was built by another ecagent version",
		e.Name, e.Segment, e.Reader)
}

// Is matches ErrIncompatible.
func (e *VersionError) Is(target error) bool { return target == ErrIncompatible }

// SizeError reports a file whose size differs from the size its header
// records: shorter (Truncated) or longer.
type SizeError struct {
	Name     string
	FileSize int64 // size of the file
	Want     int64 // size the header records, or the header's own size if the file cannot hold it
}

// Error names the file's size and the expected one.
func (e *SizeError) Error() string {
	if e.Truncated() {
		return fmt.Sprintf("shm: %s is truncated: %d bytes, want %d", e.Name, e.FileSize, e.Want)
	}
	return fmt.Sprintf("shm: %s has the wrong size: %d bytes, header says %d", e.Name, e.FileSize, e.Want)
}

// Truncated reports whether the file is shorter than it should be.
func (e *SizeError) Truncated() bool { return e.FileSize < e.Want }

// Is matches ErrIncompatible.
func (e *SizeError) Is(target error) bool { return target == ErrIncompatible }

// LayoutError reports a header whose fields disagree with the layout this
// build computes for the capacities it records: a corrupt header, or one
// from a build that changed the layout without bumping LayoutVersion.
type LayoutError struct {
	Name      string
	Field     string // the field that disagrees
	Got, Want uint64 // its value and the computed one (unset when Err is set)
	Err       error  // why the recorded capacities are invalid, if they are
}

// Error names the header field that disagrees.
func (e *LayoutError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("shm: %s: header %s: %v", e.Name, e.Field, e.Err)
	}
	return fmt.Sprintf("shm: %s: header %s is %d, want %d", e.Name, e.Field, e.Got, e.Want)
}

// Unwrap returns the validation error, if any.
func (e *LayoutError) Unwrap() error { return e.Err }

// Is matches ErrIncompatible.
func (e *LayoutError) Is(target error) bool { return target == ErrIncompatible }

// StaleError reports a segment created before the host last booted: its
// cycle process cannot be running any more.
type StaleError struct {
	Name          string
	SegmentBootID [16]byte // boot id recorded at creation
	HostBootID    [16]byte // boot id of the running kernel
}

// Error names both boot ids.
func (e *StaleError) Error() string {
	return fmt.Sprintf("shm: %s is stale: created under boot id %s, host booted as %s",
		e.Name, hex.EncodeToString(e.SegmentBootID[:]), hex.EncodeToString(e.HostBootID[:]))
}

// Is matches ErrIncompatible.
func (e *StaleError) Is(target error) bool { return target == ErrIncompatible }

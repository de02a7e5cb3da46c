//go:build !linux

package link

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"
)

// Compile-time check that RawSocket is a Link.
var _ Link = (*RawSocket)(nil)

// errNotLinux is the cause of every error from the Linux-only links.
func errNotLinux() error {
	return fmt.Errorf("%w: AF_PACKET and SOCK_SEQPACKET links need Linux, not %s", errors.ErrUnsupported, runtime.GOOS)
}

// RawSocket is an AF_PACKET raw socket; it exists only on Linux, and Open
// fails elsewhere with an error matching errors.ErrUnsupported.
type RawSocket struct{ ifname string }

// Open fails: raw sockets are not supported on this GOOS.
func Open(ifname string, cfg *Config) (*RawSocket, error) {
	return nil, &OpError{Op: "open", Link: ifname, Err: errNotLinux()}
}

// Send fails: raw sockets are not supported on this GOOS.
func (s *RawSocket) Send(frame []byte) error {
	return &OpError{Op: "send", Link: s.ifname, Err: errNotLinux()}
}

// Recv fails: raw sockets are not supported on this GOOS.
func (s *RawSocket) Recv(buf []byte, deadline time.Time) (int, error) {
	return 0, &OpError{Op: "recv", Link: s.ifname, Err: errNotLinux()}
}

// Wait fails: raw sockets are not supported on this GOOS.
func (s *RawSocket) Wait(deadline time.Time) error {
	return &OpError{Op: "recv", Link: s.ifname, Err: errNotLinux()}
}

// Poll fails: raw sockets are not supported on this GOOS.
func (s *RawSocket) Poll(buf []byte) (int, int64, error) {
	return 0, 0, &OpError{Op: "recv", Link: s.ifname, Err: errNotLinux()}
}

// Close does nothing.
func (s *RawSocket) Close() error { return nil }

// HardwareAddr returns nil.
func (s *RawSocket) HardwareAddr() net.HardwareAddr { return nil }

// Interface returns the interface name.
func (s *RawSocket) Interface() string { return s.ifname }

// QdiscBypass returns false.
func (s *RawSocket) QdiscBypass() bool { return false }

// IgnoresOutgoing returns false.
func (s *RawSocket) IgnoresOutgoing() bool { return false }

// OwnFramesOnly returns false.
func (s *RawSocket) OwnFramesOnly() bool { return false }

// Stats fails: raw sockets are not supported on this GOOS.
func (s *RawSocket) Stats() (Stats, error) {
	return Stats{}, &OpError{Op: "stats", Link: s.ifname, Err: errNotLinux()}
}

// MmapSocket is a memory-mapped packet socket; it exists only on Linux,
// and OpenMmap fails elsewhere with an error matching
// errors.ErrUnsupported.
type MmapSocket struct{ RawSocket }

// OpenMmap fails: packet rings are not supported on this GOOS.
func OpenMmap(ifname string, cfg *Config) (*MmapSocket, error) {
	return nil, &OpError{Op: "open", Link: ifname, Err: errNotLinux()}
}

//go:build !linux

package link

import (
	"net"
	"os"
	"strconv"
	"time"
)

// Compile-time check that FDLink is a Link.
var _ Link = (*FDLink)(nil)

// FDLink is a link over an AF_UNIX SOCK_SEQPACKET socket; it exists only
// on Linux, and its constructors fail elsewhere with an error matching
// errors.ErrUnsupported.
type FDLink struct{}

// NewSocketPair fails: socket-pair links are not supported on this GOOS.
func NewSocketPair() (a, b *FDLink, err error) {
	return nil, nil, &OpError{Op: "open", Link: "socketpair", Err: errNotLinux()}
}

// FileLink fails: socket-pair links are not supported on this GOOS.
func FileLink(fd int) (*FDLink, error) {
	return nil, &OpError{Op: "open", Link: "fd-" + strconv.Itoa(fd), Err: errNotLinux()}
}

// FDLinkFromFile fails: socket-pair links are not supported on this GOOS.
func FDLinkFromFile(f *os.File) (*FDLink, error) {
	return nil, &OpError{Op: "open", Link: f.Name(), Err: errNotLinux()}
}

// File fails: socket-pair links are not supported on this GOOS.
func (l *FDLink) File() (*os.File, error) {
	return nil, &OpError{Op: "file", Link: "socketpair", Err: errNotLinux()}
}

// Send fails: socket-pair links are not supported on this GOOS.
func (l *FDLink) Send(frame []byte) error {
	return &OpError{Op: "send", Link: "socketpair", Err: errNotLinux()}
}

// Recv fails: socket-pair links are not supported on this GOOS.
func (l *FDLink) Recv(buf []byte, deadline time.Time) (int, error) {
	return 0, &OpError{Op: "recv", Link: "socketpair", Err: errNotLinux()}
}

// Wait fails: socket-pair links are not supported on this GOOS.
func (l *FDLink) Wait(deadline time.Time) error {
	return &OpError{Op: "recv", Link: "socketpair", Err: errNotLinux()}
}

// Poll fails: socket-pair links are not supported on this GOOS.
func (l *FDLink) Poll(buf []byte) (int, int64, error) {
	return 0, 0, &OpError{Op: "recv", Link: "socketpair", Err: errNotLinux()}
}

// Close does nothing.
func (l *FDLink) Close() error { return nil }

// HardwareAddr returns nil.
func (l *FDLink) HardwareAddr() net.HardwareAddr { return nil }

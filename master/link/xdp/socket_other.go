//go:build !linux

package xdp

import (
	"errors"
	"net"
	"time"

	"github.com/ecagent/ecagent/master/link"
)

// Socket is an AF_XDP link; it exists only on Linux.
type Socket struct{}

// Open fails: AF_XDP is Linux's.
func Open(ifname string) (*Socket, error) {
	return nil, &link.OpError{Op: "open", Link: ifname, Err: errors.ErrUnsupported}
}

// Send fails: AF_XDP is Linux's.
func (s *Socket) Send([]byte) error { return errors.ErrUnsupported }

// Recv fails: AF_XDP is Linux's.
func (s *Socket) Recv([]byte, time.Time) (int, error) { return 0, errors.ErrUnsupported }

// Close does nothing.
func (s *Socket) Close() error { return nil }

// HardwareAddr returns nil.
func (s *Socket) HardwareAddr() net.HardwareAddr { return nil }

// Mode returns "".
func (s *Socket) Mode() string { return "" }

// ZeroCopy returns false.
func (s *Socket) ZeroCopy() bool { return false }

// RxQueues returns 0: no sysfs here.
func RxQueues(string) int { return 0 }

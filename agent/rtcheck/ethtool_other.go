//go:build !linux

package rtcheck

import "fmt"

// EthtoolNIC reads NIC settings with the kernel's ethtool ioctls; on this
// platform every query reports [ErrNotSupported].
type EthtoolNIC struct{}

var _ NICInfo = EthtoolNIC{}

// Driver implements [NICInfo].
func (EthtoolNIC) Driver(iface string) (string, error) { return "", unsupported(iface) }

// Coalescing implements [NICInfo].
func (EthtoolNIC) Coalescing(iface string) (Coalescing, error) {
	return Coalescing{}, unsupported(iface)
}

// Features implements [NICInfo].
func (EthtoolNIC) Features(iface string) (Features, error) { return nil, unsupported(iface) }

// Rings implements [NICInfo].
func (EthtoolNIC) Rings(iface string) (Rings, error) { return Rings{}, unsupported(iface) }

func unsupported(iface string) error {
	return fmt.Errorf("ethtool %s: only on Linux: %w", iface, ErrNotSupported)
}

//go:build !linux

package rtcheck

// NetlinkXDP asks the kernel's netdev netlink family; on this platform it
// reports [ErrNotSupported].
type NetlinkXDP struct{}

// XDPFeatures implements [XDPProber].
func (NetlinkXDP) XDPFeatures(iface string) (XDPFeatures, error) {
	return XDPFeatures{}, unsupported(iface)
}

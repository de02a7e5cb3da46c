//go:build linux

package rtcheck

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// NetlinkXDP asks the kernel's netdev generic netlink family (Linux 6.3+)
// what a driver can do with XDP.
type NetlinkXDP struct{}

var _ XDPProber = NetlinkXDP{}

// The netdev family (include/uapi/linux/netdev.h).
const (
	netdevCmdDevGet        = 1
	netdevADevIfindex      = 1
	netdevADevXDPFeatures  = 3
	netdevXDPActRedirect   = 2
	netdevXDPActXSKZeroCpy = 8
)

// XDPFeatures implements [XDPProber].
func (NetlinkXDP) XDPFeatures(iface string) (XDPFeatures, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return XDPFeatures{}, fmt.Errorf("%s: %w", iface, ErrNoInterface)
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_GENERIC)
	if err != nil {
		return XDPFeatures{}, fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	name := append([]byte("netdev"), 0)
	attrs, err := genlRequest(fd, unix.GENL_ID_CTRL, unix.CTRL_CMD_GETFAMILY, 1, nlAttr(unix.CTRL_ATTR_FAMILY_NAME, name))
	if errors.Is(err, unix.ENOENT) {
		return XDPFeatures{}, fmt.Errorf("%s: no netdev netlink family: %w", iface, ErrNotSupported)
	}
	if err != nil {
		return XDPFeatures{}, fmt.Errorf("netlink family netdev: %w", err)
	}
	id, ok := attrs[unix.CTRL_ATTR_FAMILY_ID]
	if !ok || len(id) < 2 {
		return XDPFeatures{}, fmt.Errorf("%s: no netdev family id: %w", iface, ErrNotSupported)
	}
	idx := make([]byte, 4)
	binary.NativeEndian.PutUint32(idx, uint32(ifi.Index))
	attrs, err = genlRequest(fd, binary.NativeEndian.Uint16(id), netdevCmdDevGet, 1, nlAttr(netdevADevIfindex, idx))
	if err != nil {
		return XDPFeatures{}, fmt.Errorf("netdev dev-get %s: %w", iface, err)
	}
	v, ok := attrs[netdevADevXDPFeatures]
	if !ok || len(v) < 8 {
		return XDPFeatures{}, fmt.Errorf("%s: no xdp-features: %w", iface, ErrNotSupported)
	}
	bits := binary.NativeEndian.Uint64(v)
	return XDPFeatures{Redirect: bits&netdevXDPActRedirect != 0, ZeroCopy: bits&netdevXDPActXSKZeroCpy != 0}, nil
}

// nlAttr encodes one netlink attribute, padded to 4 bytes.
func nlAttr(typ uint16, payload []byte) []byte {
	b := make([]byte, 4+(len(payload)+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(4+len(payload)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], payload)
	return b
}

// genlRequest sends one generic netlink request and returns the top-level
// attributes of its answer.
func genlRequest(fd int, family uint16, cmd, version uint8, attrs ...[]byte) (map[uint16][]byte, error) {
	msg := make([]byte, unix.SizeofNlMsghdr+4)
	for _, a := range attrs {
		msg = append(msg, a...)
	}
	binary.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], family)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	msg[16], msg[17] = cmd, version
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return nil, err
	}
	buf = buf[:n]
	if len(buf) < unix.SizeofNlMsghdr {
		return nil, errors.New("short netlink answer")
	}
	if binary.NativeEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		if len(buf) >= unix.SizeofNlMsghdr+4 {
			if e := int32(binary.NativeEndian.Uint32(buf[unix.SizeofNlMsghdr:])); e != 0 {
				return nil, unix.Errno(-e)
			}
		}
		return nil, errors.New("netlink error")
	}
	out := map[uint16][]byte{}
	for b := buf[unix.SizeofNlMsghdr+4 : min(len(buf), int(binary.NativeEndian.Uint32(buf[0:])))]; len(b) >= 4; {
		l := int(binary.NativeEndian.Uint16(b[0:]))
		if l < 4 || l > len(b) {
			break
		}
		out[binary.NativeEndian.Uint16(b[2:])&^unix.NLA_F_NESTED] = b[4:l]
		b = b[min(len(b), (l+3)&^3):]
	}
	return out, nil
}

package rtcheck

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// XDPFeatures is what a driver says it can do with XDP (the kernel's
// netdev netlink family, Linux 6.3+).
type XDPFeatures struct {
	// Redirect: the driver runs XDP programs natively and can redirect
	// frames, to an AF_XDP socket among others (NETDEV_XDP_ACT_REDIRECT).
	Redirect bool
	// ZeroCopy: AF_XDP sockets can receive into and send from their own
	// memory, without the kernel copying (NETDEV_XDP_ACT_XSK_ZEROCOPY).
	ZeroCopy bool
}

// XDPProber asks the kernel what a NIC's driver can do with XDP. It
// returns an error matching [ErrNotSupported] when the kernel does not
// tell (before 6.3).
type XDPProber interface {
	XDPFeatures(iface string) (XDPFeatures, error)
}

func nicXDPCheck() check {
	return check{id: "nic_xdp", title: "Fastest link the NIC takes (bus.link)", run: checkNICXDP}
}

// checkNICXDP says which link bus.link auto will use on the interface
// and what would let it use a faster one: xdp needs a driver with native
// XDP and, to be faster than mmap, zero-copy, and the AF_XDP link serves
// one receive queue.
func checkNICXDP(h *host) verdict {
	if v, stop := h.nicProblem(); stop {
		return v
	}
	queues := 0
	if entries, err := os.ReadDir(h.netPath("queues")); err == nil {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "rx-") {
				queues++
			}
		}
	}
	f, err := h.xdp.XDPFeatures(h.iface)
	if errors.Is(err, ErrNotSupported) {
		return verdict{status: Pass, found: fmt.Sprintf("%s: the kernel does not report XDP features (before 6.3); %d receive queue(s); bus.link auto tries xdp and keeps it only with zero-copy, else mmap", h.nicLabel(), queues)}
	}
	if err != nil {
		return verdict{status: Warn, found: fmt.Sprintf("cannot read the XDP features of %s: %v", h.iface, err)}
	}
	switch {
	case !f.Redirect:
		return verdict{status: Pass, found: fmt.Sprintf("%s: no native XDP in the driver (generic XDP only, no faster than mmap); bus.link auto uses mmap", h.nicLabel())}
	case !f.ZeroCopy:
		return verdict{status: Pass, found: fmt.Sprintf("%s: native XDP, copy mode only (no zero-copy): xdp costs what mmap costs; bus.link auto uses mmap", h.nicLabel())}
	case queues > 1:
		return verdict{status: Warn,
			found: fmt.Sprintf("%s: native XDP with zero-copy, but %d receive queues: the AF_XDP link serves one, so bus.link auto falls back to mmap", h.nicLabel(), queues),
			fix:   fmt.Sprintf("sudo ethtool -L %s combined 1  # then bus.link auto (or xdp) runs AF_XDP zero-copy; grant CAP_BPF and CAP_NET_ADMIN", h.iface)}
	}
	return verdict{status: Pass, found: fmt.Sprintf("%s: native XDP with zero-copy, %d receive queue(s): bus.link auto uses xdp (with CAP_BPF and CAP_NET_ADMIN; mmap without)", h.nicLabel(), max(queues, 1))}
}

package link

// Kind names how a master reaches a network interface: the values of the
// configuration key bus.link.
type Kind string

// The kinds of link to a network interface, slowest first.
const (
	// KindAuto picks the fastest kind that works on the interface: xdp,
	// then mmap, then raw.
	KindAuto Kind = "auto"
	// KindRaw is a RawSocket: a sendto and a recvmsg per frame.
	KindRaw Kind = "raw"
	// KindMmap is an MmapSocket: rings shared with the kernel, one kick
	// a frame and no system call to take an answer.
	KindMmap Kind = "mmap"
	// KindXDP is an AF_XDP socket with an XDP program redirecting
	// EtherCAT frames to it (package master/link/xdp); it needs
	// CAP_BPF and CAP_NET_ADMIN besides CAP_NET_RAW.
	KindXDP Kind = "xdp"
)

// Kinds lists the kinds, as bus.link (contract.Links) accepts them.
func Kinds() []Kind { return []Kind{KindAuto, KindRaw, KindMmap, KindXDP} }

// Fallbacks returns the kinds to try for k, in order: the kind asked for,
// then each slower one (an interface or a host that refuses xdp still
// gets mmap, and one without rings raw).
func (k Kind) Fallbacks() []Kind {
	switch k {
	case KindAuto, KindXDP:
		return []Kind{KindXDP, KindMmap, KindRaw}
	case KindMmap:
		return []Kind{KindMmap, KindRaw}
	}
	return []Kind{KindRaw}
}

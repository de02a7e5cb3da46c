package link

// Config configures a RawSocket. A nil *Config passed to Open means
// DefaultConfig(); a non-nil one is used exactly as given, so start from
// DefaultConfig() and change what you need.
type Config struct {
	// Promiscuous enables promiscuous mode for this socket only
	// (PACKET_ADD_MEMBERSHIP with PACKET_MR_PROMISC), so that frames are
	// received whatever their destination address. The kernel undoes it
	// when the socket closes; the interface-wide flag is never touched.
	// Default true.
	Promiscuous bool

	// QdiscBypass asks the kernel to hand frames straight to the driver,
	// skipping the traffic-control layer (PACKET_QDISC_BYPASS, Linux 3.14+).
	// Kernels without it are tolerated; RawSocket.QdiscBypass reports the
	// outcome. Bypassed frames are also invisible to capture tools (tcpdump,
	// tshark) on the same interface. Default true.
	QdiscBypass bool

	// OwnFramesOnly makes the socket receive only the frames that come
	// back from the segment: EtherType 0x88A4 with the interface's own
	// source address, the bit an ESC's port 0 sets (wire.ReturnedBit)
	// either way — the rule by which the master takes a frame for an
	// answer (wire.FromSegment). A classic BPF socket filter
	// (SO_ATTACH_FILTER), attached before the socket is bound, drops
	// every other frame in the kernel: junk from other sources never
	// reaches Recv, and costs the receiving thread nothing. Dropped
	// frames are counted nowhere, Stats included (PACKET_STATISTICS counts
	// the frames the filter passes); the interface's receive counter minus
	// Stats.Packets is their number. A simulated segment, which receives
	// a master's frames, turns it off. Default true.
	OwnFramesOnly bool

	// RecvBufferSize and SendBufferSize set SO_RCVBUF and SO_SNDBUF in
	// bytes (with the *FORCE variants first, so that root may exceed
	// net.core.rmem_max and wmem_max). Zero keeps the kernel's default.
	RecvBufferSize int
	SendBufferSize int
}

// DefaultConfig returns the configuration Open uses for a nil *Config:
// promiscuous, qdisc bypass requested, the master's own frames only,
// kernel default buffer sizes.
func DefaultConfig() *Config {
	return &Config{Promiscuous: true, QdiscBypass: true, OwnFramesOnly: true}
}

// SegmentConfig returns the configuration for the segment's end of a
// link, a simulated segment's: DefaultConfig without OwnFramesOnly, for
// it receives the frames a master sends, from the master's address.
func SegmentConfig() *Config {
	c := DefaultConfig()
	c.OwnFramesOnly = false
	return c
}

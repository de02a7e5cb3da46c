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

	// RecvBufferSize and SendBufferSize set SO_RCVBUF and SO_SNDBUF in
	// bytes (with the *FORCE variants first, so that root may exceed
	// net.core.rmem_max and wmem_max). Zero keeps the kernel's default.
	RecvBufferSize int
	SendBufferSize int
}

// DefaultConfig returns the configuration Open uses for a nil *Config:
// promiscuous, qdisc bypass requested, kernel default buffer sizes.
func DefaultConfig() *Config {
	return &Config{Promiscuous: true, QdiscBypass: true}
}

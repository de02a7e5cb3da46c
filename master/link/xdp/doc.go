// Package xdp is the AF_XDP link to an EtherCAT segment: an XDP program on
// the master's interface redirects EtherType 0x88A4 to an AF_XDP socket
// and passes every other frame to the kernel's stack, and the master reads
// its answers from memory it shares with the kernel (the UMEM) and the
// NIC, zero-copy where the driver offers it.
//
// It needs CAP_NET_ADMIN (attach the program), CAP_BPF (load it; or
// CAP_SYS_ADMIN on kernels before 5.8) and CAP_NET_RAW (the socket). The
// program is compiled into the binary (see gen.go) and detached when the
// socket closes or the process ends.
package xdp

// Package link moves whole Ethernet frames (destination MAC, source MAC,
// EtherType 0x88A4, EtherCAT payload) between an EtherCAT master and a
// segment, real or simulated.
//
// These kinds of [Link] are provided (and, in package master/link/xdp, an
// AF_XDP one):
//
//   - [RawSocket] is an AF_PACKET SOCK_RAW socket bound to one network
//     interface and to EtherType 0x88A4 (Linux only). It does not see the
//     frames it transmits itself (the kernel copies outgoing frames only to
//     sockets bound to all protocols; PACKET_IGNORE_OUTGOING is set as well
//     where the kernel has it), bypasses the qdisc layer where the kernel
//     allows it (which hides its frames from capture tools on the same
//     interface), and enables promiscuous mode for itself only
//     (PACKET_ADD_MEMBERSHIP), never interface-wide. By default
//     (Config.OwnFramesOnly) a classic BPF socket filter lets only the
//     frames that come back from the segment through: EtherType 0x88A4
//     from the socket's own address, the bit an ESC's port 0 sets either
//     way; the kernel drops the rest before it is queued. A simulated
//     segment opens its end with [SegmentConfig].
//   - [MmapSocket] is a RawSocket whose frames go through rings of memory
//     shared with the kernel (PACKET_MMAP, TPACKET_V2): a frame sent is a
//     copy into the transmit ring and one kick, an answer is read from the
//     receive ring with its receive time and no system call. [Kind] names
//     the kinds a master can open on an interface (the key bus.link).
//   - [PipeEnd] is one end of an in-process pair made by [NewPipe]: frames are
//     copied into fixed, pre-allocated slots; a full queue drops the frame and
//     counts it, the sender never blocks.
//   - [FDLink] is one end of an AF_UNIX SOCK_SEQPACKET socket pair made by
//     [NewSocketPair] (Linux only), so that a simulated segment can run in
//     another process: hand it [FDLink.File] through exec.Cmd.ExtraFiles and
//     turn the inherited descriptor back into a link with [FileLink] or
//     [FDLinkFromFile].
//
// # Real-time behaviour
//
// After a link has been opened, Send and Recv allocate nothing, on the
// success path and on the timeout path alike; tests assert this with
// testing.AllocsPerRun. The descriptor-based links wait with ppoll(2) and read
// with read(2) on the raw descriptor: no netpoller, no per-call socket
// address. Timeouts have nanosecond resolution for the descriptor-based links
// and the Go timer's resolution for [PipeEnd].
//
// # Concurrency
//
// One goroutine may call Send while another calls Recv on the same link.
// Send must not be called from two goroutines at once, nor Recv (each uses
// per-link scratch state).
//
// Send never blocks. A [PipeEnd] drops a frame its peer has no room for and
// counts it ([PipeEnd.Dropped]), as a wire would; the descriptor-based links
// return an error matching unix.EAGAIN (or ENOBUFS from a full driver queue)
// so that the caller can count a lost frame at once.
//
// Close may be called from any goroutine at any time, more than once; a
// Recv blocked in another goroutine then returns an error matching
// [ErrClosed] promptly: the descriptor-based links keep an eventfd in their
// poll set that Close signals, so waking up costs no latency and no
// periodic polling, and Close waits for running calls to leave before it
// releases the descriptors, so a descriptor number is never reused under a
// running syscall.
//
// # Frame sizes
//
// Frames shorter than [MinFrameSize] (60 bytes, the minimum Ethernet frame
// without FCS) are zero-padded to 60 bytes on Send, using a buffer
// pre-allocated per link. Frames shorter than [HeaderSize] are rejected.
// Recv copies at most len(buf) bytes: a frame longer than buf is truncated,
// so pass a buffer of [MaxFrameSize] bytes.
package link

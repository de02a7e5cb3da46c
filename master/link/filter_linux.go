//go:build linux

package link

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/ethercat/wire"
)

// ownFramesFilter returns the classic BPF program that a RawSocket with
// Config.OwnFramesOnly attaches (SO_ATTACH_FILTER): it passes a frame of
// EtherType 0x88A4 whose source address is addr, wire.ReturnedBit of
// the first byte either way (wire.FromSegment: the rule by which the
// master takes a frame for an answer), and drops every other frame. The
// program runs on the frame from its destination address on; a frame too
// short for a load is dropped. A VLAN tag is not in the way: the kernel
// takes it out of the frame before a packet socket sees it.
func ownFramesFilter(addr hardwareAddr) []unix.SockFilter {
	hi := uint32(addr[0]|wire.ReturnedBit)<<24 | uint32(addr[1])<<16 | uint32(addr[2])<<8 | uint32(addr[3])
	lo := uint32(addr[4])<<8 | uint32(addr[5])
	const (
		ldh  = unix.BPF_LD | unix.BPF_H | unix.BPF_ABS
		ldw  = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		or   = unix.BPF_ALU | unix.BPF_OR | unix.BPF_K
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret  = unix.BPF_RET | unix.BPF_K
		all  = 0xFFFFFFFF // pass the whole frame
		drop = 0
	)
	// A false comparison jumps to the last instruction: Jf counts the
	// instructions skipped after the jump's own.
	return []unix.SockFilter{
		{Code: ldh, K: 12},                            // 0: EtherType
		{Code: jeq, Jf: 6, K: wire.EtherType},         // 1
		{Code: ldw, K: 6},                             // 2: source bytes 0..3
		{Code: or, K: uint32(wire.ReturnedBit) << 24}, // 3
		{Code: jeq, Jf: 3, K: hi},                     // 4
		{Code: ldh, K: 10},                            // 5: source bytes 4..5
		{Code: jeq, Jf: 1, K: lo},                     // 6
		{Code: ret, K: all},                           // 7
		{Code: ret, K: drop},                          // 8
	}
}

// attachOwnFramesFilter attaches ownFramesFilter(addr) to the packet
// socket fd, before it is bound: no frame is queued unfiltered.
func attachOwnFramesFilter(fd int, addr hardwareAddr) error {
	prog := ownFramesFilter(addr)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		return fmt.Errorf("setsockopt SO_ATTACH_FILTER (own frames only): %w", err)
	}
	return nil
}

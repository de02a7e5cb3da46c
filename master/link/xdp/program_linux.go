package xdp

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The XDP program of the AF_XDP link, written as eBPF instructions rather
// than compiled from C and loaded from an ELF object: loading an object
// parses its ELF and BTF, code and garbage the cycle process would keep
// locked in memory for its lifetime (its collector is off) — about
// 0.7 MiB of its resident set. The program is small enough to read here:
//
//	now := bpf_ktime_get_ns()
//	if data+14 > data_end || data[12] != 0x88 || data[13] != 0xa4 {
//		return XDP_PASS               // not EtherCAT: the host's stack
//	}
//	if bpf_xdp_adjust_head(ctx, -8) != 0 {
//		return XDP_PASS               // no headroom: a broken driver
//	}
//	if data+8 > data_end { return XDP_PASS } // the verifier wants it
//	*(u64 *)data = now               // the arrival time, in front
//	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS)
//
// EtherCAT frames (EtherType 0x88A4) go to the socket bound to their
// receive queue with the time they arrived (CLOCK_MONOTONIC ns) in the 8
// bytes before the frame (this kernel refuses bpf_xdp_adjust_meta); every
// other frame passes to the kernel's stack, so one NIC carries EtherCAT
// and the host's own traffic. No socket on the queue: the frame passes.

// struct xdp_md's fields (<linux/bpf.h>), by offset.
const (
	xdpMDData         = 0
	xdpMDDataEnd      = 4
	xdpMDRxQueueIndex = 16
	xdpPass           = 2
	maxQueues         = 64 // entries of the socket map
)

// redirectObjects is the loaded program and its socket map.
type redirectObjects struct {
	EcatRedirect *ebpf.Program
	Xsks         *ebpf.Map
}

// Close releases the program and the map (either may be nil).
func (o *redirectObjects) Close() error {
	var errs []error
	if o.EcatRedirect != nil {
		errs = append(errs, o.EcatRedirect.Close())
		o.EcatRedirect = nil
	}
	if o.Xsks != nil {
		errs = append(errs, o.Xsks.Close())
		o.Xsks = nil
	}
	return errors.Join(errs...)
}

// loadRedirectObjects creates the socket map and loads the program that
// redirects into it.
func loadRedirectObjects(o *redirectObjects) error {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Name: "xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: maxQueues})
	if err != nil {
		return fmt.Errorf("socket map: %w", err)
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ecat_redirect", Type: ebpf.XDP, License: "Dual MIT/GPL",
		Instructions: redirectProgram(m.FD())})
	if err != nil {
		_ = m.Close()
		return fmt.Errorf("program: %w", err)
	}
	o.EcatRedirect, o.Xsks = p, m
	return nil
}

// redirectProgram returns the program's instructions for the socket map
// with descriptor xsks. Registers: R6 the context, R7 the arrival time.
func redirectProgram(xsks int) asm.Instructions {
	return asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1),
		asm.FnKtimeGetNs.Call(),
		asm.Mov.Reg(asm.R7, asm.R0),
		// An Ethernet header, EtherType 0x88A4.
		asm.LoadMem(asm.R2, asm.R6, xdpMDData, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, xdpMDDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.LoadMem(asm.R4, asm.R2, 12, asm.Byte),
		asm.JNE.Imm(asm.R4, 0x88, "pass"),
		asm.LoadMem(asm.R4, asm.R2, 13, asm.Byte),
		asm.JNE.Imm(asm.R4, 0xa4, "pass"),
		// 8 bytes more in front, the arrival time in them.
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, -8),
		asm.FnXdpAdjustHead.Call(),
		asm.JNE.Imm(asm.R0, 0, "pass"),
		asm.LoadMem(asm.R2, asm.R6, xdpMDData, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, xdpMDDataEnd, asm.Word),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 8),
		asm.JGT.Reg(asm.R4, asm.R3, "pass"),
		asm.StoreMem(asm.R2, 0, asm.R7, asm.DWord),
		// To the socket of the frame's receive queue, or the stack.
		asm.LoadMapPtr(asm.R1, xsks),
		asm.LoadMem(asm.R2, asm.R6, xdpMDRxQueueIndex, asm.Word),
		asm.Mov.Imm(asm.R3, xdpPass),
		asm.FnRedirectMap.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, xdpPass).WithSymbol("pass"),
		asm.Return(),
	}
}

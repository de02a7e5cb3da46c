package xdp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// The XDP program (bpf/redirect.c, compiled by bpf2go into the embedded
// objects redirect_bpfel.o and redirect_bpfeb.o) is loaded from its
// instructions alone, which program_insns.go holds as bytes
// (TestProgramInsnsFromObject derives them from the object and fails when
// they drift; -update rewrites them). Loading the object instead parses
// its ELF and BTF in the cycle process, whose collector is off and whose
// memory is locked: that code and its garbage would stay resident for
// the process's life, about 0.45 MiB of it.

// xdpProgram is the loaded program and its socket map.
type xdpProgram struct {
	prog *ebpf.Program
	xsks *ebpf.Map
}

// Close releases the program and the map (either may be nil).
func (o *xdpProgram) Close() error {
	var errs []error
	if o.prog != nil {
		errs = append(errs, o.prog.Close())
		o.prog = nil
	}
	if o.xsks != nil {
		errs = append(errs, o.xsks.Close())
		o.xsks = nil
	}
	return errors.Join(errs...)
}

// The socket map as bpf/redirect.c declares it.
var xsksSpec = ebpf.MapSpec{Name: "xsks", Type: ebpf.XSKMap, KeySize: 4, ValueSize: 4, MaxEntries: 64}

// load creates the socket map and loads the program that redirects into it.
func (o *xdpProgram) load() error {
	insns, err := programInsns()
	if err != nil {
		return err
	}
	m, err := ebpf.NewMap(&xsksSpec)
	if err != nil {
		return fmt.Errorf("socket map: %w", err)
	}
	if err := insns[programMapLoad].AssociateMap(m); err != nil {
		_ = m.Close()
		return fmt.Errorf("instruction %d: %w", programMapLoad, err)
	}
	p, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ecat_redirect", Type: ebpf.XDP, License: programLicense, Instructions: insns})
	if err != nil {
		_ = m.Close()
		return fmt.Errorf("program: %w", err)
	}
	o.prog, o.xsks = p, m
	return nil
}

// programInsns decodes the program's instructions.
func programInsns() (asm.Instructions, error) {
	insns, err := asm.AppendInstructions(nil, bytes.NewReader(programBytes), binary.LittleEndian, "linux")
	if err != nil {
		return nil, fmt.Errorf("decoding the XDP program: %w", err)
	}
	if programMapLoad >= len(insns) || !insns[programMapLoad].IsLoadFromMap() {
		return nil, fmt.Errorf("decoding the XDP program: instruction %d is no map load", programMapLoad)
	}
	return insns, nil
}

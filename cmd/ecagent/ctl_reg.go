package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

// regType is how `ecagent reg` reads or writes a value.
type regType struct {
	name   string
	size   int // bytes; 0 for hex (any length)
	signed bool
}

func lookupRegType(name string) (regType, error) {
	types := []regType{{"hex", 0, false}, {"uint8", 1, false}, {"uint16", 2, false}, {"uint32", 4, false},
		{"uint64", 8, false}, {"int8", 1, true}, {"int16", 2, true}, {"int32", 4, true}, {"int64", 8, true}}
	var names []string
	for _, t := range types {
		if t.name == name {
			return t, nil
		}
		names = append(names, t.name)
	}
	return regType{}, usageError{fmt.Errorf("--type %q: want one of %s", name, strings.Join(names, ", "))}
}

func regCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "reg", help{
		usage: "read -p N ADDR [LEN] | write -p N ADDR VALUE --write  [-t T]",
		about: "Read or write ESC registers of a slave by address (configured-address access, FPRD/FPWR), " +
			"like `ethercat reg_read` and `reg_write`.",
		groups: ctlGroups("type", "write"),
		notes: "ADDR and LEN are decimal or 0x hex; LEN defaults to the size of --type (1 byte for hex). " +
			"A write VALUE is a number of --type, or hex bytes (0x0102 or 01:02) for hex. Writes need " +
			"--write and are logged as maintenance events with your uid. " + ctlNotes,
		examples: []string{
			"ecagent reg read -p 1 0x0130 -t uint16   # AL status",
			"ecagent reg read -p 0 0x0000 16          # ESC information",
			"ecagent reg_write -p 2 0x0120 2 -t uint16 --write",
		},
	})
	typName := fs.StringP("type", "t", "hex", "`type`: hex, uint8, uint16, uint32, uint64, int8, int16, int32, int64")
	write := fs.Bool("write", false, "confirm a write")
	c := addCtlFlags(fs)
	pos, err := parseArgs(fs, args, 2, 4, "read -p N ADDR [LEN] or write -p N ADDR VALUE")
	if err != nil {
		return err
	}
	slave, pos, err := c.takeSlave(pos, 1)
	if err != nil {
		return err
	}
	if len(pos) < 2 || len(pos) > 3 {
		return usageError{fmt.Errorf("want read -p N ADDR [LEN] or write -p N ADDR VALUE, got %q", strings.Join(fs.Args(), " "))}
	}
	typ, err := lookupRegType(*typName)
	if err != nil {
		return err
	}
	req, err := parseRegRequest(slave, pos, typ, *write)
	if err != nil {
		return err
	}
	var res maintenance.RegResult
	if err := c.call(ctx, e, "reg", []maintenance.Request{req}, &res); err != nil {
		return err
	}
	return c.print(e.stdout, &res, func(w io.Writer) { printReg(w, res, typ, req.Op == maintenance.OpRegWrite) })
}

// parseRegRequest turns the arguments of reg after the slave's (read or
// write, ADDR, LEN or VALUE) into a request.
func parseRegRequest(slave int, pos []string, typ regType, write bool) (maintenance.Request, error) {
	addr, err := parseNumber("address", pos[1], 16)
	if err != nil {
		return maintenance.Request{}, err
	}
	req := maintenance.Request{Slave: slave, Addr: uint16(addr)}
	switch pos[0] {
	case "read":
		req.Op, req.Len = maintenance.OpRegRead, max(typ.size, 1)
		if len(pos) == 3 {
			n, err := parseNumber("length", pos[2], 16)
			if err != nil {
				return req, err
			}
			if typ.size != 0 && int(n) != typ.size {
				return req, usageError{fmt.Errorf("length %d does not match --type %s", n, typ.name)}
			}
			req.Len = int(n)
		}
	case "write":
		if len(pos) != 3 {
			return req, usageError{fmt.Errorf("reg write: want -p N ADDR VALUE")}
		}
		if err := needWrite("reg write", write); err != nil {
			return req, err
		}
		req.Op, req.Write = maintenance.OpRegWrite, true
		if req.Data, err = parseRegValue(pos[2], typ); err != nil {
			return req, err
		}
	default:
		return req, usageError{fmt.Errorf("reg: %q is neither read nor write", pos[0])}
	}
	return req, nil
}

// parseRegValue encodes s as typ, little endian as the ESC stores it.
func parseRegValue(s string, typ regType) ([]byte, error) {
	if typ.size == 0 {
		digits := strings.NewReplacer(":", "", " ", "").Replace(strings.TrimPrefix(strings.ToLower(s), "0x"))
		b, err := hex.DecodeString(digits)
		if err != nil || len(b) == 0 {
			return nil, usageError{fmt.Errorf("value %q: want hex bytes such as 0x0102 or 01:02 (as stored, first byte first)", s)}
		}
		return b, nil
	}
	var v uint64
	if typ.signed {
		n, err := strconv.ParseInt(s, 0, 8*typ.size)
		if err != nil {
			return nil, usageError{fmt.Errorf("value %q as %s: %w", s, typ.name, err)}
		}
		v = uint64(n)
	} else {
		n, err := strconv.ParseUint(s, 0, 8*typ.size)
		if err != nil {
			return nil, usageError{fmt.Errorf("value %q as %s: %w", s, typ.name, err)}
		}
		v = n
	}
	b := binary.LittleEndian.AppendUint64(nil, v)
	return b[:typ.size], nil
}

// printReg prints registers: typed as hex and decimal, else as a hex dump
// with addresses.
func printReg(w io.Writer, res maintenance.RegResult, typ regType, written bool) {
	if written {
		fmt.Fprintf(w, "slave %d: %d bytes written at %#04x\n", res.Slave, len(res.Data), res.Addr)
		return
	}
	if typ.size != 0 && len(res.Data) == typ.size {
		var b [8]byte
		copy(b[:], res.Data)
		u := binary.LittleEndian.Uint64(b[:])
		if typ.signed {
			shift := 64 - 8*typ.size
			fmt.Fprintf(w, "0x%0*x %d\n", 2*typ.size, u, int64(u<<shift)>>shift)
			return
		}
		fmt.Fprintf(w, "0x%0*x %d\n", 2*typ.size, u, u)
		return
	}
	for off := 0; off < len(res.Data); off += 16 {
		end := min(off+16, len(res.Data))
		fmt.Fprintf(w, "%#04x: % x\n", int(res.Addr)+off, res.Data[off:end])
	}
}

package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// sdoType is how a value given or printed by `ecagent sdo` is laid out.
type sdoType struct {
	name   string
	size   int // bytes; 0 for "bytes" (any length)
	signed bool
}

// sdoTypes are the values of --type.
func sdoTypes() []sdoType {
	return []sdoType{
		{"u8", 1, false}, {"u16", 2, false}, {"u32", 4, false},
		{"i8", 1, true}, {"i16", 2, true}, {"i32", 4, true},
		{"bytes", 0, false},
	}
}

func lookupSDOType(name string) (sdoType, error) {
	var names []string
	for _, t := range sdoTypes() {
		if t.name == name {
			return t, nil
		}
		names = append(names, t.name)
	}
	return sdoType{}, fmt.Errorf("--type %q: want one of %s", name, strings.Join(names, ", "))
}

func sdoCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "sdo", help{
		usage: "read|write --slave N INDEX:SUB [VALUE] [--type T] [--iface IF]",
		about: "Read (upload) or write (download) one CoE object of a slave through its mailbox, after " +
			"scanning the segment and taking every slave to PREOP.",
		notes: "N is the ring position (the POS column of 'ecagent scan'). INDEX and SUB are hex, with " +
			"or without 0x, as the object list of 'ecagent scan' and the vendors' documentation write " +
			"them: 0x6000:11 and 6000:11 both name sub-index 0x11 (17) of object 0x6000. VALUE is " +
			"decimal or 0x hex for the integer types and hex digits (optionally 0x-prefixed, with : or " +
			"space separators) for bytes; put a negative VALUE after -- . Reads print the value in hex " +
			"and decimal. Without --iface the built-in simulated segment (--devices) answers.",
		examples: []string{
			"ecagent sdo read --iface eth1 --slave 2 0x1018:1",
			"ecagent sdo read --devices EK1100,EL3004 --slave 1 6000:11   # sub-index 0x11: channel 1's value",
			"ecagent sdo write --iface eth1 --slave 2 --type u16 0x8000:06 0x0001",
		},
	})
	bus := addBusFlags(fs)
	slave := fs.Int("slave", -1, "ring `position` of the slave (required)")
	typ := fs.String("type", "", "value type: u8, u16, u32, i8, i16, i32 or bytes (required for write; read: unsigned by length)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	req, err := parseSDORequest(fs.Args(), *slave, *typ)
	if err != nil {
		return usageError{err}
	}
	m, slaves, closeBus, err := bus.scanBus(ctx, e, 0)
	if err != nil {
		return wrapUnlessUsage("sdo", err)
	}
	defer closeBus()
	if req.slave >= len(slaves) {
		return usageError{fmt.Errorf("--slave %d: the segment has %d slaves", req.slave, len(slaves))}
	}
	if err := m.RequestState(ctx, esc.StatePreOp); err != nil {
		return fmt.Errorf("sdo: %w", err)
	}
	s := slaves[req.slave]
	if req.write {
		if err := m.SDODownload(ctx, s, req.index, req.sub, req.value); err != nil {
			return fmt.Errorf("sdo: %w", err)
		}
		fmt.Fprintf(e.stdout, "%v %#04x:%02x written: ", s, req.index, req.sub)
		printSDOValue(e.stdout, req.value, req.typ)
		return nil
	}
	data, err := m.SDOUpload(ctx, s, req.index, req.sub)
	if err != nil {
		return fmt.Errorf("sdo: %w", err)
	}
	fmt.Fprintf(e.stdout, "%v %#04x:%02x = ", s, req.index, req.sub)
	printSDOValue(e.stdout, data, req.typ)
	return nil
}

// sdoRequest is a parsed `ecagent sdo` command line.
type sdoRequest struct {
	write bool
	slave int
	index uint16
	sub   uint8
	typ   sdoType // name "" for a read without --type
	value []byte  // write only
}

func parseSDORequest(args []string, slave int, typ string) (sdoRequest, error) {
	var r sdoRequest
	if len(args) < 2 {
		return r, errors.New("sdo: want read|write and INDEX:SUB")
	}
	switch args[0] {
	case "read":
		if len(args) != 2 {
			return r, fmt.Errorf("sdo read: want INDEX:SUB only, got %q", args[1:])
		}
	case "write":
		r.write = true
		if len(args) != 3 {
			return r, fmt.Errorf("sdo write: want INDEX:SUB VALUE, got %q", args[1:])
		}
		if typ == "" {
			return r, errors.New("sdo write: --type is required")
		}
	default:
		return r, fmt.Errorf("sdo: %q is neither read nor write", args[0])
	}
	if slave < 0 {
		return r, errors.New("sdo: --slave is required")
	}
	r.slave = slave
	if typ != "" {
		t, err := lookupSDOType(typ)
		if err != nil {
			return r, err
		}
		r.typ = t
	}
	idx, sub, ok := strings.Cut(args[1], ":")
	if !ok {
		return r, fmt.Errorf("sdo: object %q: want INDEX:SUB", args[1])
	}
	i, err := parseHex(idx, 16)
	if err != nil {
		return r, fmt.Errorf("sdo: index %q: want hex 0000 to FFFF (0x optional): %w", idx, err)
	}
	s, err := parseHex(sub, 8)
	if err != nil {
		return r, fmt.Errorf("sdo: sub-index %q: want hex 00 to FF (0x optional): %w", sub, err)
	}
	r.index, r.sub = uint16(i), uint8(s)
	if r.write {
		if r.value, err = parseSDOValue(args[2], r.typ); err != nil {
			return r, err
		}
	}
	return r, nil
}

// parseHex parses an index or sub-index: hex digits, 0x optional, so that
// "11" and "0x11" are both 17, as EtherCAT documentation writes them.
func parseHex(s string, bits int) (uint64, error) {
	digits := s
	if len(digits) > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X') {
		digits = digits[2:]
	}
	v, err := strconv.ParseUint(digits, 16, bits)
	if err != nil {
		return 0, errors.Unwrap(err) // ErrSyntax or ErrRange, without repeating s
	}
	return v, nil
}

// parseSDOValue encodes s as t, little endian as CoE transfers it.
func parseSDOValue(s string, t sdoType) ([]byte, error) {
	if t.size == 0 {
		digits := strings.NewReplacer(":", "", " ", "").Replace(strings.TrimPrefix(strings.ToLower(s), "0x"))
		b, err := hex.DecodeString(digits)
		if err != nil || len(b) == 0 {
			return nil, fmt.Errorf("sdo: value %q: want hex bytes such as 0x0102 or 01:02", s)
		}
		return b, nil
	}
	var v uint64
	if t.signed {
		n, err := strconv.ParseInt(s, 0, t.size*8)
		if err != nil {
			return nil, fmt.Errorf("sdo: value %q as %s: %w", s, t.name, err)
		}
		v = uint64(n)
	} else {
		n, err := strconv.ParseUint(s, 0, t.size*8)
		if err != nil {
			return nil, fmt.Errorf("sdo: value %q as %s: %w", s, t.name, err)
		}
		v = n
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return b[:t.size], nil
}

// printSDOValue prints data as t, in hex and decimal. Without a type,
// 1, 2 and 4 bytes print as unsigned numbers, anything else as bytes.
func printSDOValue(w io.Writer, data []byte, t sdoType) {
	if t.name == "" {
		t = sdoType{name: "bytes"}
		if n := len(data); n == 1 || n == 2 || n == 4 {
			t = sdoType{name: fmt.Sprintf("u%d", 8*n), size: n}
		}
	}
	if t.size == 0 || len(data) != t.size {
		fmt.Fprintf(w, "% x (%d bytes", data, len(data))
		if printable(data) {
			fmt.Fprintf(w, ", %q", data)
		}
		if t.size != 0 {
			fmt.Fprintf(w, ", not a %s", t.name)
		}
		fmt.Fprintln(w, ")")
		return
	}
	var b [8]byte
	copy(b[:], data)
	u := binary.LittleEndian.Uint64(b[:])
	if t.signed {
		shift := 64 - 8*t.size
		fmt.Fprintf(w, "0x%0*x (%d)\n", 2*t.size, u, int64(u<<shift)>>shift)
		return
	}
	fmt.Fprintf(w, "0x%0*x (%d)\n", 2*t.size, u, u)
}

// printable reports whether data is non-empty printable text.
func printable(data []byte) bool {
	if len(data) == 0 {
		return false
	}
	for _, r := range string(data) {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

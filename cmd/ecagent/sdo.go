package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/cycle/maintenance"
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
		usage:  "read|write -p N INDEX:SUB [VALUE] [--type T]",
		about:  "Read (upload) or write (download) one CoE object entry of a slave through its mailbox.",
		groups: ctlGroups("type"),
		notes: "INDEX and SUB are hex, 0x optional, as vendors write them: 6000:11 is sub-index 0x11 of " +
			"object 0x6000. VALUE is decimal or 0x hex for the integer types, hex digits (: or space " +
			"between bytes allowed) for bytes; put a negative VALUE after -- . A write is logged as a " +
			"maintenance event with your uid. On a segment opened here the slaves are taken to PREOP " +
			"first. " + ctlNotes,
		examples: []string{
			"ecagent sdo read -p 2 0x1018:1",
			"ecagent sdo write -p 2 --type u16 0x8000:06 0x0001",
			"ecagent upload -p 1 6000:11 --sim --devices EK1100,EL3004",
		},
	})
	typ := fs.StringP("type", "t", "", "value `type`: u8, u16, u32, i8, i16, i32 or bytes (write: required)")
	c := addCtlFlags(fs)
	fs.IntVar(c.sel.position, "slave", -1, "ring position of the slave (older name of --position)")
	_ = fs.MarkHidden("slave")
	c.preop = true
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	slave := -1
	if c.sel.given() {
		slave = selectedSlave
	}
	req, err := parseSDORequest(fs.Args(), slave, *typ)
	if err != nil {
		return usageError{err}
	}
	mreq := maintenance.Request{Op: maintenance.OpSDOUpload, Slave: req.slave, Index: req.index, Sub: req.sub}
	if req.write {
		mreq.Op, mreq.Data, mreq.Write = maintenance.OpSDODownload, req.value, true
	}
	var res maintenance.SDOResult
	if err := c.call(ctx, e, "sdo", []maintenance.Request{mreq}, &res); err != nil {
		return err
	}
	return c.print(e.stdout, &res, func(w io.Writer) {
		if req.write {
			fmt.Fprintf(w, "%s %#04x:%02x written: ", res.Label, res.Index, res.Sub)
		} else {
			fmt.Fprintf(w, "%s %#04x:%02x = ", res.Label, res.Index, res.Sub)
		}
		printSDOValue(w, res.Data, req.typ)
	})
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
	if slave == -1 {
		return r, errors.New("sdo: name the slave: -p N (ring position) or -a ALIAS[:OFFSET]")
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

func sdosCommand(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "sdos", help{
		usage:  "[-p N] [--values]",
		about:  "List the CoE object dictionary of one slave, or of every slave, as the SDO information service describes it.",
		groups: ctlGroups("values"),
		notes: "Each object with its entries: index:sub, data type, bit length, access (PREOP, SAFEOP, OP) " +
			"and name; --values adds the values up to 64 bytes that may be read. Slaves without a CoE " +
			"mailbox get one line. " + ctlNotes,
		examples: []string{
			"ecagent sdos -p 2",
			"ecagent sdos --values --json > dictionary.json",
		},
	})
	values := fs.Bool("values", false, "read the short values too")
	c := addCtlFlags(fs)
	c.preop = true
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	sess, err := c.open(ctx, e, "sdos")
	if err != nil {
		return err
	}
	defer sess.close()
	call := func(r maintenance.Request) (json.RawMessage, error) { return sess.call(ctx, r, nil) }
	if err := c.resolve(ctx, "sdos", sess, nil); err != nil {
		return err
	}
	positions := []int{*c.sel.resolved}
	if *c.sel.resolved < 0 {
		var list maintenance.SlavesResult
		if err := callAll("sdos", []maintenance.Request{{Op: maintenance.OpSlaves}}, []any{&list}, func(int) {}, call); err != nil {
			return err
		}
		positions = positions[:0]
		for _, s := range list.Slaves {
			positions = append(positions, s.Position)
		}
	}
	res := sdosResult{Dictionaries: []maintenance.SDOInfoResult{}}
	for _, p := range positions {
		var d maintenance.SDOInfoResult
		if err := callAll("sdos", []maintenance.Request{{Op: maintenance.OpSDOInfo, Slave: p, Values: *values}}, []any{&d},
			func(int) {}, call); err != nil {
			return err
		}
		res.Dictionaries = append(res.Dictionaries, d)
	}
	return c.print(e.stdout, &res, func(w io.Writer) {
		for _, d := range res.Dictionaries {
			printDictionary(w, d)
		}
	})
}

// sdosResult is what sdos prints.
type sdosResult struct {
	Dictionaries []maintenance.SDOInfoResult `json:"dictionaries"`
}

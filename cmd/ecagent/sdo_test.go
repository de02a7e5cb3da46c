package main

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"
)

func TestSDOCommandOnSimulatedSegment(t *testing.T) {
	ctx := context.Background()
	devices := "EK1100,EL4132,EL3004"
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string // must appear in stdout
		stderr string // must appear in stderr
	}{
		{"vendor id", []string{"read", "--slave", "1", "0x1018:1"}, exitOK, "0x1018:01 = 0x00000002 (2)", ""},
		// Sub-indexes are hex like the index, with or without 0x:
		// 0x6000:11 is the EL3004's channel 1 value (0x11), not 0x0B.
		{"hex sub-index", []string{"read", "--slave", "2", "0x6000:11"}, exitOK, "0x6000:11 = 0x", ""},
		{"hex without 0x", []string{"read", "--slave", "2", "6000:0x11"}, exitOK, "0x6000:11 = 0x", ""},
		{"sub-index beyond 0xFF", []string{"read", "--slave", "2", "0x6000:100"}, exitUsage, "", `sub-index "100": want hex`},
		{"product code as i32", []string{"read", "--slave", "1", "--type", "i32", "0x1018:02"}, exitOK, "= 0x10243052 (270807122)", ""},
		{"device name", []string{"read", "--slave", "2", "0x1008:0"}, exitOK, `"EL3004 4K. Ana. Eingang -10-+10V"`, ""},
		{"write code word", []string{"write", "--slave", "2", "--type", "u32", "0xF008:0", "0x12345678"}, exitOK, "written: 0x12345678 (305419896)", ""},
		{"negative value", []string{"write", "--slave", "2", "--type", "i32", "0xF008:0", "--", "-2"}, exitOK, "written: 0xfffffffe (-2)", ""},
		{"nonexistent object", []string{"read", "--slave", "1", "0x5555:0"}, exitFailure, "",
			"0x06020000 (object does not exist in the object dictionary)"},
		{"wrong length", []string{"write", "--slave", "1", "--type", "u16", "0xF008:0", "7"}, exitFailure, "", "0x06070013"},
		{"slave without mailbox", []string{"read", "--slave", "0", "0x1000:0"}, exitFailure, "", "no CoE mailbox"},
		{"slave out of range", []string{"read", "-p", "7", "0x1000:0"}, exitFailure, "", "the segment has 3 slaves"},
		{"no slave", []string{"read", "0x1000:0"}, exitUsage, "", "name the slave: -p N"},
		{"write without type", []string{"write", "--slave", "1", "0xF008:0", "1"}, exitUsage, "", "--type is required"},
		{"bad object", []string{"read", "--slave", "1", "0x1018"}, exitUsage, "", "want INDEX:SUB"},
		{"value out of range", []string{"write", "--slave", "1", "--type", "u8", "0xF008:0", "256"}, exitUsage, "", `value "256" as u8`},
		{"bad operation", []string{"frob", "--slave", "1", "0x1018:1"}, exitUsage, "", "neither read nor write"},
	}
	for _, c := range cases {
		args := append([]string{"sdo", "--sim", "--devices", devices}, c.args...)
		code, out, errOut := runCLI(t, ctx, nil, args...)
		if code != c.code || !strings.Contains(out, c.stdout) || !strings.Contains(errOut, c.stderr) {
			t.Errorf("%s: ecagent %s: exit %d (want %d)\nstdout: %s\nstderr: %s", c.name, strings.Join(args, " "), code, c.code, out, errOut)
		}
		// A transfer that worked ends with the simulated segment's wire
		// closed: that is its normal end, not an error to report.
		if code == exitOK && strings.Contains(errOut, "level=ERROR") {
			t.Errorf("%s: a successful transfer logged an error:\n%s", c.name, errOut)
		}
	}
}

func TestParseSDORequestReadsHex(t *testing.T) {
	cases := []struct {
		object string
		index  uint16
		sub    uint8
		ok     bool
	}{
		{"0x6000:11", 0x6000, 0x11, true},
		{"6000:11", 0x6000, 0x11, true},
		{"0x6000:0x11", 0x6000, 0x11, true},
		{"0X1A00:0A", 0x1A00, 0x0A, true},
		{"1018:1", 0x1018, 0x01, true},
		{"0x8000:06", 0x8000, 0x06, true},
		{"0x6000:FF", 0x6000, 0xFF, true},
		{"0x6000:100", 0, 0, false},
		{"0x10000:0", 0, 0, false},
		{"0x6000:", 0, 0, false},
		{"0x:1", 0, 0, false},
		{"0x6000:-1", 0, 0, false},
		{"0x6000:0x", 0, 0, false},
	}
	for _, c := range cases {
		r, err := parseSDORequest([]string{"read", c.object}, 1, "")
		switch {
		case !c.ok && err == nil:
			t.Errorf("%s: %#04x:%02x, want an error", c.object, r.index, r.sub)
		case c.ok && (err != nil || r.index != c.index || r.sub != c.sub):
			t.Errorf("%s: %#04x:%02x, %v; want %#04x:%02x", c.object, r.index, r.sub, err, c.index, c.sub)
		}
	}
	help, _ := helpOf(t, "sdo")
	for _, want := range []string{"INDEX and SUB are hex", "6000:11"} {
		if !strings.Contains(help, want) {
			t.Errorf("sdo --help does not say %q:\n%s", want, help)
		}
	}
}

func TestParseSDOValue(t *testing.T) {
	cases := []struct {
		in, typ string
		want    string // hex, "" for an error
	}{
		{"255", "u8", "ff"},
		{"0x1234", "u16", "3412"},
		{"4294967295", "u32", "ffffffff"},
		{"-1", "i16", "ffff"},
		{"-128", "i8", "80"},
		{"0x01:02 ff", "bytes", "0102ff"},
		{"256", "u8", ""},
		{"-129", "i8", ""},
		{"0xzz", "bytes", ""},
		{"", "bytes", ""},
	}
	for _, c := range cases {
		typ, err := lookupSDOType(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseSDOValue(c.in, typ)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("parseSDOValue(%q, %s) = % x, want an error", c.in, c.typ, got)
		case c.want != "" && (err != nil || hex.EncodeToString(got) != c.want):
			t.Errorf("parseSDOValue(%q, %s) = % x, %v; want %s", c.in, c.typ, got, err, c.want)
		}
	}
}

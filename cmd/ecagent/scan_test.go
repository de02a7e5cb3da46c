package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/coe"
)

// TestScanSDO lists the object dictionaries of a simulated segment: the
// coupler has none, the EL3004's objects and entries come with their
// descriptions and short values.
func TestScanSDO(t *testing.T) {
	code, out, errOut := runCLI(t, context.Background(), nil, "scan", "--sim", "--devices", "EK1100,EL3004", "--sdo")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	for _, want := range []string{
		"slave 0 (0x1001 EK1100): no CoE mailbox",
		`0x1018 RECORD "Identity", max sub 4`,
		`0x1008 VAR "Device name", max sub 0`,
		`0x1c13 ARRAY "TxPDO assign", max sub 8`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, re := range []string{
		`(?m)^slave 1 \(0x1002 EL3004\): \d+ objects$`,
		`(?m)^  0x1018:02  UNSIGNED32 +32 bit +r-r-r- +"Product code" += 0x0bbc3052 \(196882514\)$`,
		`(?m)^  0x1008:00  VISIBLE_STRING +256 bit +r-r-r- +"Device name" += "EL3004 4K\. Ana\. Eingang -10-\+10V"$`,
		`(?m)^  0x1c13:00  UNSIGNED8 +8 bit +rwr-r- +"SubIndex 000" += 0x04 \(4\)$`,
		`(?m)^  0xf008:00  UNSIGNED32 +32 bit +rwrwrw +"Code word" += 0x00000000 \(0\)$`,
		`(?m)^  0x6000:11  INTEGER16 +16 bit +r-r-r- TxPDO +"Value" += 0x0000 \(0\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("output does not match %s:\n%s", re, out)
		}
	}
	// Gaps in a sub-index range are skipped, not printed as errors.
	if strings.Contains(out, "0x6000:08") || strings.Contains(errOut, "scan:") {
		t.Errorf("missing sub-index listed, or errors:\n%s\nstderr: %s", out, errOut)
	}
}

func TestFormatEntryValue(t *testing.T) {
	cases := []struct {
		v    []byte
		typ  coe.DataType
		want string
	}{
		{[]byte("EL3004"), 0x0009, `= "EL3004"`},
		{[]byte{0xFE, 0xFF}, 0x0003, "= 0xfffe (-2)"},
		{[]byte{0xFE, 0xFF}, 0x0006, "= 0xfffe (65534)"},
		{[]byte{1, 2, 3}, 0x0016, "= 01 02 03 (3 bytes)"},
	}
	for _, c := range cases {
		if got := formatEntryValue(c.v, c.typ); got != c.want {
			t.Errorf("formatEntryValue(% x, %v) = %q, want %q", c.v, c.typ, got, c.want)
		}
	}
}

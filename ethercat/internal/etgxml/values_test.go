package etgxml

import (
	"errors"
	"strings"
	"testing"
)

func TestParseUint(t *testing.T) {
	tests := []struct {
		in   string
		max  uint64
		bits bool
		want uint64
		err  error
	}{
		{"#x1A00", 0xFFFF, false, 0x1A00, nil},
		{"#X1a00", 0xFFFF, false, 0x1A00, nil},
		{"0x1c12", 0xFFFF, false, 0x1C12, nil},
		{" 6656 ", 0xFFFF, false, 6656, nil},
		{"+12", 0xFF, false, 12, nil},
		{"010", 0xFF, false, 10, nil},
		{"-0", 0xFF, false, 0, nil},
		{"65535", 0xFFFF, false, 65535, nil},
		{"65536", 0xFFFF, false, 0, errRange},
		{"#x10000", 0xFFFF, false, 0, errRange},
		{"-1", 0xFFFF, false, 0, errRange},
		{"-1", 0xFFFF, true, 0xFFFF, nil},
		{"-32768", 0xFFFF, true, 0x8000, nil},
		{"-32769", 0xFFFF, true, 0, errRange},
		{"-1", 1<<64 - 1, true, 1<<64 - 1, nil},
		{"99999999999999999999", 1<<64 - 1, false, 0, errRange},
		{"", 0xFF, false, 0, errNotNumber},
		{"#x", 0xFF, false, 0, errNotNumber},
		{"0x", 0xFF, false, 0, errNotNumber},
		{"#xG1", 0xFF, false, 0, errNotNumber},
		{"1_000", 0xFFFF, false, 0, errNotNumber},
		{"+-1", 0xFF, false, 0, errNotNumber},
		{"1.5", 0xFF, false, 0, errNotNumber},
		{"true", 0xFF, false, 0, errNotNumber},
	}
	for _, tt := range tests {
		got, err := ParseUint(tt.in, tt.max, tt.bits)
		if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) || got != tt.want {
			t.Errorf("ParseUint(%q, %#x, %v) = %#x, %v; want %#x, %v", tt.in, tt.max, tt.bits, got, err, tt.want, tt.err)
		}
	}
}

func TestParseInt(t *testing.T) {
	tests := []struct {
		in       string
		min, max int64
		want     int64
		err      error
	}{
		{"-2000", -1 << 31, 1<<31 - 1, -2000, nil},
		{"#x7FFFFFFF", -1 << 31, 1<<31 - 1, 1<<31 - 1, nil},
		{"-#x80000000", -1 << 31, 1<<31 - 1, -1 << 31, nil},
		{"2147483648", -1 << 31, 1<<31 - 1, 0, errRange},
		{"-2147483649", -1 << 31, 1<<31 - 1, 0, errRange},
		{"-9223372036854775808", -1 << 63, 1<<63 - 1, -1 << 63, nil},
		{"x", -1, 1, 0, errNotNumber},
	}
	for _, tt := range tests {
		got, err := ParseInt(tt.in, tt.min, tt.max)
		if !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) || got != tt.want {
			t.Errorf("ParseInt(%q) = %d, %v; want %d, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestSignedRange(t *testing.T) {
	if lo, hi := signedRange[int8](); lo != -128 || hi != 127 {
		t.Errorf("int8: %d..%d", lo, hi)
	}
	if lo, hi := signedRange[int16](); lo != -32768 || hi != 32767 {
		t.Errorf("int16: %d..%d", lo, hi)
	}
	if lo, hi := signedRange[int64](); lo != -1<<63 || hi != 1<<63-1 {
		t.Errorf("int64: %d..%d", lo, hi)
	}
}

// TestValueErrorsNameEverything checks that a bad value's error names the
// file, line, element path, attribute, value and what is allowed.
func TestValueErrorsNameEverything(t *testing.T) {
	root, _, err := readAll(t, "<A>\n<P><Index>#x1G00</Index></P>\n<P Sm=\"x\"/><H>0A1</H><B>yes</B><E>Foo</E></A>", testLimits)
	if err != nil {
		t.Fatal(err)
	}
	x := NewErrors("t.xml")
	ps := root.Children("P")
	Uint[uint16](x, ps[0].Child("Index"))
	UintAttr[uint8](x, ps[1], "Sm")
	Hex(x, root.Child("H"))
	Bool(x, root.Child("B"))
	OneOf(x, root.Child("E"), "Outputs", "Inputs")
	Need(x, ps[1], "Index")
	Uint[uint8](x, nil) // absent: the caller's to report
	want := []string{
		`t.xml:2:11: A/P[1]/Index: value "#x1G00": not a number: write decimal (1234) or #x hex (#x04D2), 0 to 65535`,
		`t.xml:3:12: A/P[2]@Sm: value "x": not a number`,
		`A/H: value "0A1": not hexBinary`,
		`A/B: value "yes": not a boolean: allowed true, false, 1 or 0`,
		`A/E: value "Foo": allowed: Outputs, Inputs`,
		`A/P[2]: required <Index> missing`,
	}
	err = x.Err()
	if x.Len() != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", x.Len(), len(want), err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("errors lack %q:\n%v", w, err)
		}
	}
	if !errors.Is(err, ErrValue) || !errors.Is(err, ErrMissing) {
		t.Errorf("errors.Is fails on %v", err)
	}
}

func TestErrorsAreCapped(t *testing.T) {
	x := NewErrors("f")
	for range maxErrors + 5 {
		x.At(nil, "", "v", ErrValue, "bad")
	}
	if x.Len() != maxErrors+5 || !strings.Contains(x.Err().Error(), "and 5 more problems") {
		t.Errorf("Len %d, Err %v", x.Len(), x.Err())
	}
}

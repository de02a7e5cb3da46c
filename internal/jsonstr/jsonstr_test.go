package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestAppend(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{`quote" back\slash`, `"quote\" back\\slash"`},
		{"\n\r\t\x00\x1f\x7f", `"\n\r\t\u0000\u001f\u007f"`},
		{"<&>", `"\u003c\u0026\u003e"`},
		{"€ µ °C", `"€ µ °C"`},
		{"a\xffb\xfe", "\"a\ufffdb\ufffd\""},
		{"\xe2\x82", "\"\ufffd\ufffd\""}, // a truncated €: one U+FFFD per byte
	} {
		if got := string(Append([]byte("x"), c.in)); got != "x"+c.want {
			t.Errorf("Append(%q) = %s, want %s", c.in, got[1:], c.want)
		}
	}
	if got := string(AppendPlain(nil, "a<&>\n\x01")); got != `"a<&>\n\u0001"` {
		t.Errorf("AppendPlain = %s", got)
	}
}

func TestAppendAllocatesNothingWithRoom(t *testing.T) {
	b := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { b = Append(b[:0], "temperature <°C>\n") }); n != 0 {
		t.Errorf("Append allocated %v times into a slice with room", n)
	}
}

// FuzzAppend: the literal is valid JSON and decodes to the input, invalid
// UTF-8 replaced as encoding/json replaces it; what was in b stays.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\x00\x1f\n\t<&>", "€ µ °C", "\xff\xfe", "\u2028", "\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		check(t, s, Append([]byte("[1,"), s), true)
		check(t, s, AppendPlain([]byte("[1,"), s), false)
	})
}

// check checks b, Append's or AppendPlain's output of s after "[1,".
func check(t *testing.T, s string, b []byte, html bool) {
	t.Helper()
	if string(b[:3]) != "[1," {
		t.Fatalf("the prefix changed: %q", b)
	}
	var back string
	if err := json.Unmarshal(b[3:], &back); err != nil {
		t.Fatalf("%q → %s: %v", s, b[3:], err)
	}
	want := s
	if !utf8.ValidString(s) {
		want = string([]rune(s)) // U+FFFD per bad byte, as encoding/json
	}
	if back != want {
		t.Fatalf("%q → %s → %q", s, b[3:], back)
	}
	if html && bytes.ContainsAny(b, "<>&") || !html && strings.Count(string(b), "<") != strings.Count(s, "<") {
		t.Fatalf("%q → %s: HTML characters (html %v)", s, b[3:], html)
	}
}

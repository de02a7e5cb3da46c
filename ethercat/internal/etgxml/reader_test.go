package etgxml

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"
)

var testLimits = Limits{MaxBytes: 1 << 20, MaxDepth: 16, MaxElements: 1000}

// readAll opens the root want and fills it whole.
func readAll(t *testing.T, doc string, lim Limits) (*Element, *Warnings, error) {
	t.Helper()
	var w Warnings
	r := NewReader(strings.NewReader(doc), "t.xml", lim.Or(Limits{MaxSubtree: 500}), &w)
	root, err := r.Root("A")
	if err != nil {
		return nil, &w, err
	}
	if err := r.Fill(root); err != nil {
		return nil, &w, err
	}
	if err := r.End(); err != nil {
		return nil, &w, err
	}
	return root, &w, nil
}

func TestReaderRefuses(t *testing.T) {
	deep := strings.Repeat("<B>", 20) + strings.Repeat("</B>", 20)
	many := strings.Repeat("<B/>", 1200)
	tests := []struct {
		name, doc string
		kind      error
		want      string // in the message
	}{
		{"billion laughs", `<?xml version="1.0"?><!DOCTYPE A [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]><A>&b;</A>`, ErrDoctype, "entities"},
		{"external entity", `<!DOCTYPE A [<!ENTITY x SYSTEM "file:///etc/passwd">]><A>&x;</A>`, ErrDoctype, "entities"},
		{"external DTD", `<!DOCTYPE A SYSTEM "http://example.invalid/a.dtd"><A/>`, ErrDoctype, "external DTD"},
		{"internal subset", `<!DOCTYPE A [<!ATTLIST A x CDATA "1">]><A/>`, ErrDoctype, "internal subset"},
		{"undeclared entity", `<A>&nope;</A>`, ErrSyntax, "entity"},
		{"too deep", "<A>" + deep + "</A>", ErrTooDeep, "deeper than 16"},
		{"too many", "<A>" + many + "</A>", ErrTooManyElements, "more than"},
		{"too large", "<A>" + strings.Repeat(" ", 2<<20) + "</A>", ErrTooLarge, "limit"},
		{"wrong root", `<B/>`, ErrRoot, "this file kind has <A>"},
		{"empty", ``, ErrSyntax, "no root element"},
		{"unclosed", `<A><B>`, ErrSyntax, "ends inside <B>"},
		{"mismatched", "<A>\n<B></C></A>", ErrSyntax, "element <B> closed by </C>"},
		{"two roots", `<A/><A/>`, ErrSyntax, "second root"},
		{"unknown encoding", `<?xml version="1.0" encoding="EBCDIC"?><A/>`, ErrEncoding, "EBCDIC"},
		{"utf-16 lie", `<?xml version="1.0" encoding="UTF-16"?><A/>`, ErrEncoding, "not UTF-16"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, _, err := readAll(t, tt.doc, testLimits)
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %v with %q", err, tt.kind, tt.want)
			}
			if root != nil {
				t.Error("an element came with the error")
			}
		})
	}
}

func TestReaderSyntaxErrorSaysWhere(t *testing.T) {
	_, _, err := readAll(t, "<A>\n <B>\n  <C x=1/>\n </B>\n</A>", testLimits)
	var e *Error
	if !errors.As(err, &e) || e.Line != 3 || e.Col == 0 || e.Path != "A/B/C" && e.Path != "A/B" {
		t.Fatalf("err = %#v, want line 3, a column and the path A/B", err)
	}
	if !strings.HasPrefix(err.Error(), "t.xml:3:") {
		t.Errorf("message %q does not start with the file and line", err)
	}
}

func TestReaderBareDoctypeIsAWarning(t *testing.T) {
	_, w, err := readAll(t, `<!DOCTYPE A><A/>`, testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if l := w.List(); len(l) != 1 || l[0].Path != "<!DOCTYPE>" {
		t.Errorf("warnings %v, want the DOCTYPE", l)
	}
}

func TestOpenRefusesALargeFileAtOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.xml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil { // a sparse 1 GiB file
		t.Fatal(err)
	}
	f.Close()
	_, err = Open(path, 256<<20)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "1.0 GiB") {
		t.Fatalf("Open = %v, want ErrTooLarge naming 1.0 GiB", err)
	}
	if _, err := Open(t.TempDir(), 1<<20); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Open(dir) = %v", err)
	}
}

func TestEncodings(t *testing.T) {
	utf16le := func(s string, bom bool) string {
		var b bytes.Buffer
		if bom {
			b.Write([]byte{0xFF, 0xFE})
		}
		for _, u := range utf16.Encode([]rune(s)) {
			b.WriteByte(byte(u))
			b.WriteByte(byte(u >> 8))
		}
		return b.String()
	}
	utf16be := func(s string) string {
		b := []byte{0xFE, 0xFF}
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u>>8), byte(u))
		}
		return string(b)
	}
	const text = "Kühler Ü € 𝄞"
	tests := []struct{ name, doc, want string }{
		{"utf-8", `<?xml version="1.0" encoding="UTF-8"?><A>` + text + `</A>`, text},
		{"utf-8 bom", "\xEF\xBB\xBF<A>" + text + "</A>", text},
		{"latin-1", `<?xml version="1.0" encoding="ISO-8859-1"?><A>K` + "\xFC" + `hler</A>`, "Kühler"},
		{"iso8859-1 spelled as KickCAT's sample", `<?xml version="1.0" encoding="ISO8859-1"?><A>` + "\xDC" + `</A>`, "Ü"},
		{"windows-1252 euro", `<?xml version="1.0" encoding="windows-1252"?><A>` + "\x80" + `</A>`, "€"},
		{"utf-16le bom", utf16le(`<?xml version="1.0" encoding="UTF-16"?><A>`+text+`</A>`, true), text},
		{"utf-16le no bom", utf16le(`<?xml version="1.0" encoding="UTF-16"?><A>`+text+`</A>`, false), text},
		{"utf-16be bom", utf16be(`<?xml version="1.0" encoding="UTF-16"?><A>` + text + `</A>`), text},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root, _, err := readAll(t, tt.doc, testLimits)
			if err != nil {
				t.Fatal(err)
			}
			if got := root.Text(); got != tt.want {
				t.Errorf("text %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStreamingAndUnused(t *testing.T) {
	doc := `<A xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="a.xsd" V="1">
  <L><I n="1"><X>1</X><Y>2</Y></I><I n="2" odd="yes"><X>3</X><Z/><Z/></I></L>
  <M/>
</A>`
	var w Warnings
	r := NewReader(strings.NewReader(doc), "t.xml", testLimits.Or(Limits{MaxSubtree: 100}), &w)
	root, err := r.Root("A")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := root.Attr("V"); v != "1" {
		t.Errorf("V = %q", v)
	}
	var xs []string
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if e == nil {
			break
		}
		if e.Name != "L" {
			if err := r.Ignore(e, func(p string) string {
				if _, last := LastSteps(p); last == "M" {
					return "M is not for us"
				}
				return ""
			}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		for {
			item, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if item == nil {
				break
			}
			if err := r.Fill(item); err != nil {
				t.Fatal(err)
			}
			item.Attr("n")
			xs = append(xs, item.Child("X").Text())
			if item.index == 2 && item.Path() != "A/L/I[2]" {
				t.Errorf("path %q", item.Path())
			}
			w.Unused("t.xml", item, nil)
		}
	}
	if err := r.End(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(xs, ",") != "1,3" {
		t.Errorf("X = %v", xs)
	}
	got := map[string]int{}
	for _, x := range w.List() {
		got[x.Path+" "+x.Reason] = x.Count
	}
	want := map[string]int{
		"A/L/I/Y " + NotRead:   1,
		"A/L/I@odd " + NotRead: 1,
		"A/L/I/Z " + NotRead:   2,
		"A/M M is not for us":  1,
	}
	if len(got) != len(want) {
		t.Errorf("warnings %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("warning %q counted %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}

func TestFillBoundsOneSubtree(t *testing.T) {
	var w Warnings
	doc := "<A><B>" + strings.Repeat("<C/>", 200) + "</B></A>"
	r := NewReader(strings.NewReader(doc), "t.xml", testLimits.Or(Limits{MaxSubtree: 100}), &w)
	if _, err := r.Root("A"); err != nil {
		t.Fatal(err)
	}
	b, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Fill(b); !errors.Is(err, ErrTooManyElements) {
		t.Fatalf("Fill = %v, want ErrTooManyElements", err)
	}
}

func TestSizeGuardCutsAPipe(t *testing.T) {
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte("<A>"))
		for range 100 {
			if _, err := pw.Write(bytes.Repeat([]byte(" "), 64<<10)); err != nil {
				return
			}
		}
		pw.Close()
	}()
	defer pr.Close()
	var w Warnings
	r := NewReader(pr, "pipe", Limits{MaxBytes: 1 << 20, MaxDepth: 4, MaxElements: 10, MaxSubtree: 10}, &w)
	root, err := r.Root("A")
	if err == nil {
		err = r.Fill(root)
	}
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

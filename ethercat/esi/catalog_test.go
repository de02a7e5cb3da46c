package esi

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// esiOf is an ESI file of vendor with one device per revision, product
// code product, order code typ.
func esiOf(vendor, product uint32, typ string, revisions ...uint32) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<EtherCATInfo><Vendor><Id>#x%x</Id></Vendor><Descriptions><Devices>\n", vendor)
	for _, r := range revisions {
		fmt.Fprintf(&b, "<Device><Type ProductCode=\"#x%x\" RevisionNo=\"#x%08x\">%s</Type></Device>\n", product, r, typ)
	}
	b.WriteString("</Devices></Descriptions></EtherCATInfo>\n")
	return b.String()
}

func TestLookup(t *testing.T) {
	c := NewCatalog(Options{})
	for i, doc := range []string{
		esiOf(2, 0x0C1E3052, "EL3102", 0x00100000, 0x00140000, 0x00150000, 0x0012000A, 0x0016000A),
		esiOf(0x6A, 0x414B44, "AKD", 0x00000002, 0x00010005, 0x00020000),
	} {
		if err := c.Add(strings.NewReader(doc), fmt.Sprintf("f%d.xml", i)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name            string
		vendor, product uint32
		asked, found    uint32
		ok, exact       bool
		note            string
	}{
		{"exact", 2, 0x0C1E3052, 0x00140000, 0x00140000, true, true, ""},
		{"newer device, older description", 2, 0x0C1E3052, 0x00180000, 0x00150000, true, false, "the nearest older one"},
		{"between two", 2, 0x0C1E3052, 0x00130000, 0x00100000, true, false, "the nearest older one"},
		{"older than all", 2, 0x0C1E3052, 0x000F0000, 0x00100000, true, false, "the nearest newer one: no older one is described"},
		{"Beckhoff variant first", 2, 0x0C1E3052, 0x0014000A, 0x0012000A, true, false, "older"},
		{"Beckhoff variant, newer", 2, 0x0C1E3052, 0x0011000A, 0x0012000A, true, false, "newer"},
		{"Beckhoff unknown variant", 2, 0x0C1E3052, 0x00140001, 0x00140000, true, false, "older"},
		{"other vendor: plain order", 0x6A, 0x414B44, 0x00010007, 0x00010005, true, false, "older"},
		{"other vendor: exact", 0x6A, 0x414B44, 2, 2, true, true, ""},
		{"unknown product", 2, 0x0C1F3052, 0x00140000, 0, false, false, ""},
		{"unknown vendor", 3, 0x0C1E3052, 0x00140000, 0, false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := c.Lookup(tt.vendor, tt.product, tt.asked)
			if ok := err == nil; ok != tt.ok || !ok && !errors.Is(err, ErrNotFound) {
				t.Fatalf("err = %v", err)
			}
			ok := err == nil
			if m.Asked != (Key{tt.vendor, tt.product, tt.asked}) {
				t.Errorf("Asked %v", m.Asked)
			}
			if !ok {
				return
			}
			if m.Found.Revision != tt.found || m.Device.RevisionNo != tt.found || m.Exact != tt.exact || !strings.Contains(m.Note, tt.note) {
				t.Errorf("found %#08x exact %v note %q; want %#08x %v %q", m.Found.Revision, m.Exact, m.Note, tt.found, tt.exact, tt.note)
			}
			if !tt.exact && !strings.Contains(m.Note, fmt.Sprintf("using revision %#08x from f", tt.found)) {
				t.Errorf("note %q does not name the revision used and its file", m.Note)
			}
		})
	}
	if c.Len() != 8 || len(c.Keys()) != 8 || c.Keys()[0] != (Key{2, 0x0C1E3052, 0x00100000}) {
		t.Errorf("Len %d, keys %v", c.Len(), c.Keys())
	}
}

func TestCatalogKeepsTheFirstOfTwoDescriptions(t *testing.T) {
	c := NewCatalog(Options{})
	for _, name := range []string{"a.xml", "b.xml"} {
		if err := c.Add(strings.NewReader(esiOf(2, 0x10, "X", 1, 2)), name); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.Lookup(2, 0x10, 2)
	if err != nil || c.Len() != 2 || m.File.Name != "a.xml" {
		t.Errorf("Len %d, match from %s", c.Len(), m.File.Name)
	}
	ws := c.Warnings()
	if len(ws) != 2 || ws[0].File != "b.xml" || !strings.Contains(ws[0].Reason, "the one in a.xml line 2 is used") {
		t.Errorf("warnings %v", ws)
	}
}

func TestCatalogAddsNothingOfABadFile(t *testing.T) {
	c := NewCatalog(Options{})
	doc := esiOf(2, 0x10, "X", 1, 2)
	doc = strings.Replace(doc, `RevisionNo="#x00000002"`, `RevisionNo="two"`, 1)
	if err := c.Add(strings.NewReader(doc), "bad.xml"); !errors.Is(err, ErrValue) {
		t.Fatalf("Add = %v", err)
	}
	if c.Len() != 0 || len(c.Files()) != 0 {
		t.Errorf("a bad file added %d devices, files %v", c.Len(), c.Files())
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "Beckhoff")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range testFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(sub, filepath.Base(f)), string(b))
	}
	writeFile(t, filepath.Join(dir, "broken.XML"), "<EtherCATInfo><Vendor>")
	writeFile(t, filepath.Join(dir, "line.xml"), "<EtherCATConfig/>")
	writeFile(t, filepath.Join(dir, "readme.txt"), "not xml")
	c, err := LoadDir(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "broken.XML") || !errors.Is(err, ErrSyntax) {
		t.Errorf("LoadDir error %v, want the broken file's", err)
	}
	if c.Len() != 8 || len(c.Files()) != 6 {
		t.Errorf("%d devices from %v", c.Len(), c.Files())
	}
	var notESI bool
	for _, w := range c.Warnings() {
		notESI = notESI || strings.Contains(w.String(), "line.xml") && strings.Contains(w.Reason, "not an ESI file")
	}
	if !notESI {
		t.Errorf("no warning about line.xml: %v", c.Warnings())
	}
	if m, err := c.Lookup(2, 0x044C2C52, 0x00120000); err != nil || m.Group() == nil || m.Group().Name.String() != "System Couplers" {
		t.Errorf("EK1100: %+v", m)
	}
}

func TestLoadDirWithoutFiles(t *testing.T) {
	if _, err := LoadDir(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "no ESI files") {
		t.Errorf("err = %v", err)
	}
	if _, err := LoadDir(filepath.Join(t.TempDir(), "nope"), Options{}); err == nil {
		t.Error("a missing directory loaded")
	}
}

func TestReadFileRefusesALargeFileUnread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.xml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := ReadFile(path, Options{}); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "256.0 MiB") {
		t.Errorf("ReadFile = %v", err)
	}
	if err := NewCatalog(Options{}).AddFile(path); !errors.Is(err, ErrTooLarge) {
		t.Errorf("AddFile = %v", err)
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// encodings returns the file's text in the encodings a vendor's file may
// come in, each with its XML declaration: the bytes as they are, UTF-8
// with a byte-order mark, UTF-16 both ways.
func encodings(t *testing.T, path string) map[string][]byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if strings.Contains(text, `encoding="ISO-8859-1"`) {
		var b strings.Builder
		for _, c := range raw {
			b.WriteRune(rune(c)) // Latin-1 to UTF-8
		}
		text = b.String()
	}
	utf8 := strings.Replace(text, `encoding="ISO-8859-1"`, `encoding="UTF-8"`, 1)
	utf16 := strings.Replace(utf8, `encoding="UTF-8"`, `encoding="UTF-16"`, 1)
	le, be := []byte{0xFF, 0xFE}, []byte{0xFE, 0xFF}
	for _, u := range utf16Units(utf16) {
		le = append(le, byte(u), byte(u>>8))
		be = append(be, byte(u>>8), byte(u))
	}
	return map[string][]byte{"as is": raw, "utf-8 bom": append([]byte("\xEF\xBB\xBF"), utf8...), "utf-16le": le, "utf-16be": be}
}

func utf16Units(s string) []uint16 {
	var out []uint16
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}

// TestCatalogReadsDevicesAgain checks that a device the catalogue reads
// again from its file on demand is the device read with the whole file,
// in every encoding.
func TestCatalogReadsDevicesAgain(t *testing.T) {
	for _, path := range testFiles {
		want := readTestFile(t, path)
		for enc, b := range encodings(t, path) {
			t.Run(filepath.Base(path)+"/"+enc, func(t *testing.T) {
				p := filepath.Join(t.TempDir(), filepath.Base(path))
				writeFile(t, p, string(b))
				c := NewCatalog(Options{})
				if err := c.AddFile(p); err != nil {
					t.Fatal(err)
				}
				for _, list := range c.byProduct {
					for _, e := range list {
						if e.dev != nil {
							t.Fatalf("%s kept whole, not located for reading again", e.typ)
						}
					}
				}
				for i := range want.Devices {
					w := &want.Devices[i]
					m, err := c.Lookup(want.Vendor.ID, w.ProductCode, w.RevisionNo)
					if err != nil {
						t.Fatal(err)
					}
					if got, wanted := deviceText(m.Device), deviceText(w); got != wanted {
						t.Errorf("%s read again differs:\n%s", w.Type, firstDiff(got, wanted))
					}
				}
			})
		}
	}
}

// deviceText renders a device for comparison.
func deviceText(d *Device) string {
	var b strings.Builder
	deviceSummary(&b, d)
	return b.String()
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(al), len(bl))
}

// TestCatalogNoticesAChangedFile checks that a file changed after it was
// indexed is not read as if it were the same.
func TestCatalogNoticesAChangedFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.xml")
	doc := esiOf(2, 0x10, "X", 1, 2, 3)
	writeFile(t, p, doc)
	c := NewCatalog(Options{})
	if err := c.AddFile(p); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, strings.Replace(doc, `RevisionNo="#x00000001"`, `RevisionNo="#x00000009"`, 1)+"<!-- -->")
	if _, err := c.Lookup(2, 0x10, 1); err == nil || !strings.Contains(err.Error(), "changed since it was indexed") {
		t.Errorf("Lookup = %v", err)
	}
}

// TestCatalogOfABigFileHoldsLittle indexes a 50 MB catalogue and checks
// that the index holds a small fraction of it, and that its last device
// reads again.
func TestCatalogOfABigFileHoldsLittle(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 50 MB file")
	}
	path, size, n := catalogueFile(t, 50<<20)
	held := heldBy(func() any {
		c := NewCatalog(Options{})
		if err := c.AddFile(path); err != nil {
			t.Fatal(err)
		}
		return c
	})
	if held > int64(size)/50 {
		t.Errorf("the index of %d devices holds %d KB for a %d MB file", n, held>>10, size>>20)
	}
	c := NewCatalog(Options{})
	if err := c.AddFile(path); err != nil {
		t.Fatal(err)
	}
	m, err := c.Lookup(2, uint32(n), 0x00140000)
	if err != nil || m.Device.Dictionary().Object(0x8010) == nil || m.Device.Line < 1000000 {
		t.Errorf("last device: %v, %+v", err, m.Device)
	}
	t.Logf("%d devices, %d MB: the index holds %d KB (%.1f bytes per device)", n, size>>20, held>>10, float64(held)/float64(n))
}

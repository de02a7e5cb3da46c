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
			m, ok := c.Lookup(tt.vendor, tt.product, tt.asked)
			if ok != tt.ok {
				t.Fatalf("ok = %v", ok)
			}
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
	m, _ := c.Lookup(2, 0x10, 2)
	if c.Len() != 2 || m.File.Name != "a.xml" {
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
	if m, ok := c.Lookup(2, 0x044C2C52, 0x00120000); !ok || m.Group() == nil || m.Group().Name.String() != "System Couplers" {
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

package esinames

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/contract"
)

const esiDir = "../../testdata/esi"

// unnamedAI is the bus description the cycle process writes for the
// analog input terminal when its SII names nothing: entries named by
// index, no data types, no PDO names.
func unnamedAI(rev uint32) *contract.BusInfo {
	sig := func(pdo, index uint16, sub uint8, bits, off int) contract.SignalInfo {
		return contract.SignalInfo{PDO: pdo, Index: index, SubIndex: sub, Bits: bits, Offset: off,
			Name: "0x" + strings.ToUpper(hex16(index)) + ":" + strings.ToUpper(hex8(sub))}
	}
	return &contract.BusInfo{Slaves: []contract.SlaveInfo{
		{Position: 0, VendorID: 2, ProductCode: 0x044C2C52, Revision: 0x00120000, OrderCode: "EK1100", Name: "EK1100"},
		{Position: 1, VendorID: 0x00ECA901, ProductCode: 0x0C1E0EA1, Revision: rev, Signals: []contract.SignalInfo{
			sig(0x1A00, 0x6000, 0x01, 1, 0),
			sig(0x1A00, 0x6000, 0x11, 16, 16),
			sig(0x1A01, 0x6010, 0x11, 16, 48),
		}},
	}}
}

func hex16(v uint16) string { return hexN(uint64(v), 4) }
func hex8(v uint8) string   { return hexN(uint64(v), 2) }
func hexN(v uint64, n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b)
}

// TestAnnotate: signals the SII leaves unnamed take the ESI's entry and
// PDO names and data types, every signal its unit; the slave its order
// code and name; a slave no ESI describes is left as it is.
func TestAnnotate(t *testing.T) {
	c, err := Load([]string{esiDir})
	if err != nil {
		t.Fatal(err)
	}
	if c.Devices() != 2 || c.Files() != 1 {
		t.Fatalf("%d devices in %d files", c.Devices(), c.Files())
	}
	info := unnamedAI(0x00110000)
	notes := c.Annotate(info)
	if len(notes) != 1 || !strings.Contains(notes[0], "slave 1 (EA3102): 3 of 3 signals") {
		t.Errorf("notes %q", notes)
	}
	if s := info.Slaves[0]; s.OrderCode != "EK1100" || len(s.Signals) != 0 {
		t.Errorf("the coupler, which no ESI here describes, changed: %+v", s)
	}
	ai := info.Slaves[1]
	if ai.OrderCode != "EA3102" || ai.Name != "EA3102 2Ch. Ana. Input +/-10V" {
		t.Errorf("slave %q %q", ai.OrderCode, ai.Name)
	}
	want := []contract.SignalInfo{
		{PDOName: "AI Standard Channel 1", Name: "Status__Underrange", DataType: 0x01},
		{PDOName: "AI Standard Channel 1", Name: "Value", DataType: 0x03, Unit: "mV"},
		{PDOName: "AI Standard Channel 2", Name: "Value", DataType: 0x03, Unit: "mV"},
	}
	for i, w := range want {
		g := ai.Signals[i]
		if g.PDOName != w.PDOName || g.Name != w.Name || g.DataType != w.DataType || g.Unit != w.Unit {
			t.Errorf("signal %d: %q %q type %d unit %q, want %q %q type %d unit %q", i, g.PDOName, g.Name, g.DataType, g.Unit,
				w.PDOName, w.Name, w.DataType, w.Unit)
		}
	}
	// What the SII names keeps its name.
	info = unnamedAI(0x00110000)
	info.Slaves[1].Signals[1].Name, info.Slaves[1].Signals[1].PDOName = "Wert", "Kanal 1"
	c.Annotate(info)
	if g := info.Slaves[1].Signals[1]; g.Name != "Wert" || g.PDOName != "Kanal 1" || g.Unit != "mV" {
		t.Errorf("an SII-named signal: %+v", g)
	}
	// A revision no ESI describes takes the nearest, and says so.
	info = unnamedAI(0x00180000)
	notes = c.Annotate(info)
	if len(notes) != 1 || !strings.Contains(notes[0], "using revision 0x00110000") || info.Slaves[1].Signals[1].Name != "Value" {
		t.Errorf("another revision: notes %q, signal %+v", notes, info.Slaves[1].Signals[1])
	}
}

// TestLoadBroken: a broken ESI file is reported with its place and left
// out; the good files still name their devices.
func TestLoadBroken(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join(esiDir, "example-ea3102.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"a-good.xml":   string(good),
		"b-broken.xml": "<EtherCATInfo><Vendor><Id>2</Id></Vendor><Descriptions><Devices><Device><Type ProductCode=\"#xZZ\" RevisionNo=\"1\">X</Type></Device></Devices></Descriptions></EtherCATInfo>",
		"c-other.xml":  "<EtherCATConfig/>",
		"notes.txt":    "not XML",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load([]string{dir})
	if err == nil || !strings.Contains(err.Error(), "b-broken.xml:1:") || !strings.Contains(err.Error(), "ProductCode") {
		t.Errorf("error %v, want the broken file's place and attribute", err)
	}
	if c.Devices() != 2 {
		t.Errorf("%d devices indexed, want the good file's 2", c.Devices())
	}
}

func TestUnitText(t *testing.T) {
	for code, want := range map[uint32]string{
		0:          "",
		0xFD260000: "mV",
		0x00260000: "V",
		0x002D0000: "°C",
		0xFA040000: "µA",
		0x00010300: "m/s",
		0x03240000: "kW",
		0x00A40000: "ETG.1004 unit #x00A40000",
		0x7F260000: "ETG.1004 unit #x7F260000",
	} {
		if got := UnitText(code); got != want {
			t.Errorf("UnitText(%#08x) = %q, want %q", code, got, want)
		}
	}
}

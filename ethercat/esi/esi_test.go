package esi

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

// testFiles are the ESI files of testdata, written for these tests in
// the shapes vendors' files have.
var testFiles = []string{
	"testdata/beckhoff/Beckhoff EK11xx.xml",
	"testdata/beckhoff/Beckhoff EL1xxx.xml",
	"testdata/beckhoff/Beckhoff EL2xxx.xml",
	"testdata/beckhoff/Beckhoff EL3xxx.xml",
	"testdata/beckhoff/Beckhoff EL4xxx.xml",
	"testdata/cia402-drive.xml",
}

func readTestFile(t *testing.T, path string) *File {
	t.Helper()
	f, err := ReadFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGolden renders every test file whole; go test -update rewrites
// testdata/golden after a deliberate change.
func TestGolden(t *testing.T) {
	for _, path := range testFiles {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := readTestFile(t, path)
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(filepath.Base(path), ".xml")+".txt")
			testsupport.Golden(t, golden, []byte(summary(f)))
		})
	}
}

// TestSegmentDevices checks the devices of the default simulated segment
// against what the simulator's models and the real devices report.
func TestSegmentDevices(t *testing.T) {
	c, err := LoadDir("testdata/beckhoff", Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		typ               string
		product, revision uint32
		name              string
		sms               []SyncManager
		rx, tx            []uint16 // PDO indexes
		entry             PDOEntry // the first entry of the first PDO
	}{
		{typ: "EK1100", product: 0x044C2C52, revision: 0x00120000, name: "EK1100 EtherCAT Coupler (2A E-Bus)"},
		{typ: "EK1110", product: 0x04562C52, revision: 0x00110000, name: "EK1110 EtherCAT extension"},
		{typ: "EL1014", product: 0x03F63052, revision: 0x00130000, name: "EL1014 4Ch. Dig. Input 24V, 10µs",
			sms:   []SyncManager{{Type: SMInputs, StartAddress: 0x1000, Enable: true}},
			tx:    []uint16{0x1A00, 0x1A01, 0x1A02, 0x1A03},
			entry: PDOEntry{Index: 0x6000, SubIndex: 1, BitLen: 1, Name: Texts{{Value: "Input"}}, DataType: "BOOL"}},
		{typ: "EL2004", product: 0x07D43052, revision: 0x00100000, name: "EL2004 4Ch. Dig. Output 24V, 0.5A",
			sms:   []SyncManager{{Type: SMOutputs, StartAddress: 0x0F00, ControlByte: 0x44, Enable: true}},
			rx:    []uint16{0x1600, 0x1601, 0x1602, 0x1603},
			entry: PDOEntry{Index: 0x7000, SubIndex: 1, BitLen: 1, Name: Texts{{Value: "Output"}}, DataType: "BOOL"}},
		{typ: "EL4132", product: 0x10243052, revision: 0x00140000, name: "EL4132 2Ch. Ana. Output +/-10V, 16bit",
			sms: []SyncManager{
				{Type: SMMailboxOut, StartAddress: 0x1000, DefaultSize: 128, MinSize: 34, MaxSize: 128, ControlByte: 0x26, Enable: true},
				{Type: SMMailboxIn, StartAddress: 0x1080, DefaultSize: 128, MinSize: 34, MaxSize: 128, ControlByte: 0x22, Enable: true},
				{Type: SMOutputs, StartAddress: 0x1100, DefaultSize: 4, ControlByte: 0x64, Enable: true},
				{Type: SMInputs, StartAddress: 0x1180, ControlByte: 0x20}},
			rx:    []uint16{0x1600, 0x1601},
			entry: PDOEntry{Index: 0x7000, SubIndex: 1, BitLen: 16, Name: Texts{{Value: "Analog output"}}, DataType: "INT"}},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			m, err := c.Lookup(2, tt.product, tt.revision)
			if err != nil || !m.Exact {
				t.Fatalf("Lookup = %+v, %v", m, err)
			}
			d := m.Device
			if d.Type != tt.typ || d.Name.String() != tt.name || d.ProductCode != tt.product || d.RevisionNo != tt.revision {
				t.Errorf("device %s %q %#x %#x", d.Type, d.Name, d.ProductCode, d.RevisionNo)
			}
			if !slices.Equal(d.SyncManagers, tt.sms) {
				t.Errorf("sync managers\n%+v, want\n%+v", d.SyncManagers, tt.sms)
			}
			if got := pdoIndexes(d.RxPDOs); !slices.Equal(got, tt.rx) {
				t.Errorf("RxPDOs %#x, want %#x", got, tt.rx)
			}
			if got := pdoIndexes(d.TxPDOs); !slices.Equal(got, tt.tx) {
				t.Errorf("TxPDOs %#x, want %#x", got, tt.tx)
			}
			if pdos := append(d.RxPDOs, d.TxPDOs...); len(pdos) > 0 {
				e := pdos[0].Entries[0]
				if e.Index != tt.entry.Index || e.SubIndex != tt.entry.SubIndex || e.BitLen != tt.entry.BitLen ||
					e.Name.String() != tt.entry.Name.String() || e.DataType != tt.entry.DataType {
					t.Errorf("first entry %+v, want %+v", e, tt.entry)
				}
				if !pdos[0].Fixed || !pdos[0].Mandatory {
					t.Errorf("first PDO not fixed and mandatory: %+v", pdos[0])
				}
			}
		})
	}
}

func pdoIndexes(ps []PDO) []uint16 {
	var out []uint16
	for _, p := range ps {
		out = append(out, p.Index)
	}
	return out
}

// TestEL3102Dictionary checks the object dictionary of the analog input
// the simulator has no model of: records, arrays in records, defaults in
// each written form, enumerations, access and mapping rights.
func TestEL3102Dictionary(t *testing.T) {
	f := readTestFile(t, "testdata/beckhoff/Beckhoff EL3xxx.xml")
	d := f.Devices[0]
	dict := d.Dictionary()
	if dict == nil || d.Profiles[0].ProfileNo != 5001 {
		t.Fatalf("no dictionary or profile %+v", d.Profiles)
	}
	tests := []struct {
		index   uint16
		sub     uint8
		kind    ObjectKind
		name    string
		typ     string
		base    string
		bits    uint32
		access  Access
		mapping PDOMapping
		def     []byte
	}{
		{0x1000, 0, KindVar, "Device type", "UDINT", "UDINT", 32, AccessRO, MapNone, []byte{0x89, 0x13, 0x49, 0x01}},
		{0x1008, 0, KindVar, "Device name", "STRING(6)", "STRING(6)", 48, AccessRO, MapNone, []byte("EL3102")},
		{0x1018, 2, KindRecord, "Product code", "UDINT", "UDINT", 32, AccessRO, MapNone, []byte{0x52, 0x30, 0x1E, 0x0C}},
		{0x1A00, 10, KindRecord, "SubIndex 010", "UDINT", "UDINT", 32, AccessRO, MapNone, []byte{0x10, 0x11, 0x00, 0x60}},
		{0x1C13, 0, KindArray, "SubIndex 000", "USINT", "USINT", 8, AccessRW, MapNone, []byte{2}},
		{0x1C13, 2, KindArray, "SubIndex 002", "UINT", "UINT", 16, AccessRW, MapNone, []byte{0x02, 0x1A}},
		{0x6010, 0x11, KindRecord, "Value", "INT", "INT", 16, AccessRO, MapTx, nil},
		{0x6000, 3, KindRecord, "Limit 1", "BIT2", "BIT2", 2, AccessRO, MapTx, nil},
		{0x8000, 2, KindRecord, "Presentation", "DT8000EN03", "BIT3", 3, AccessRW, MapNone, []byte{0}},
		{0x8000, 0x12, KindRecord, "Gain", "DINT", "DINT", 32, AccessRW, MapNone, []byte{0, 0, 1, 0}},
		{0x8000, 0x13, KindRecord, "Limit 1", "INT", "INT", 16, AccessRW, MapNone, []byte{0x01, 0x80}},
		{0x8000, 0x14, KindRecord, "Limit 2", "INT", "INT", 16, AccessRW, MapNone, []byte{0xFF, 0x7F}},
		{0x8000, 0x15, KindRecord, "Filter settings", "DT8000EN16", "UINT", 16, AccessRW, MapNone, []byte{0, 0}},
		{0xF008, 0, KindVar, "Code word", "UDINT", "UDINT", 32, AccessRW, MapNone, []byte{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		o := dict.Object(tt.index)
		if o == nil {
			t.Errorf("no object %#04x", tt.index)
			continue
		}
		e := o.Entry(tt.sub)
		if o.Kind != tt.kind || e == nil {
			t.Errorf("%#04x: kind %v, entry %v; want %v with subindex %d (entries %+v)", tt.index, o.Kind, e, tt.kind, tt.sub, o.Entries)
			continue
		}
		if e.Name != tt.name || e.DataType != tt.typ || e.BaseType != tt.base || e.BitSize != tt.bits ||
			e.Flags.Access != tt.access || e.Flags.PDOMapping != tt.mapping || !bytes.Equal(e.Default, tt.def) {
			t.Errorf("%#04x:%02x = %+v\nwant name %q type %s/%s %d bits %v %v default %x", tt.index, tt.sub, *e,
				tt.name, tt.typ, tt.base, tt.bits, tt.access, tt.mapping, tt.def)
		}
	}
	if n := len(dict.Object(0x1A00).Entries); n != 11 {
		t.Errorf("0x1A00 has %d entries, want 11 (subindex 0 and 10 mapped)", n)
	}
	if len(f.Warnings) != 0 {
		t.Errorf("warnings: %v", f.Warnings)
	}
}

// TestEL3102Device checks the rest of the analog input: PDO alternatives,
// DC modes, mailbox.
func TestEL3102Device(t *testing.T) {
	d := readTestFile(t, "testdata/beckhoff/Beckhoff EL3xxx.xml").Devices[0]
	if d.CheckRevisionNo != "EQ_OR_G" || d.Info.SafeopOpTimeout != 10000 || d.Info.EBusCurrent != 130 {
		t.Errorf("type and info: %q %+v", d.CheckRevisionNo, d.Info)
	}
	std, compact := d.TxPDOs[0], d.TxPDOs[1]
	if std.SyncManager != 3 || compact.SyncManager != NoSyncManager || !slices.Equal(compact.Exclude, []uint16{0x1A00}) {
		t.Errorf("standard %+v compact %+v", std, compact)
	}
	if std.BitLen() != 32 || !std.Entries[5].Padding() || std.Entries[9].SubIndex != 0x11 {
		t.Errorf("standard PDO: %d bits, entries %+v", std.BitLen(), std.Entries)
	}
	if m := d.Mailbox; m == nil || m.Protocols != ProtocolCoE|ProtocolFoE || !m.CoE.PdoAssign || m.CoE.PdoConfig ||
		len(m.CoE.InitCmds) != 1 || m.CoE.InitCmds[0].Transitions[0] != "PS" {
		t.Errorf("mailbox %+v", d.Mailbox)
	}
	if d.DC == nil || len(d.DC.OpModes) != 3 {
		t.Fatalf("DC %+v", d.DC)
	}
	in := d.DC.OpModes[2]
	if in.AssignActivate != 0x700 || !in.ShiftTimeSync0.Input || in.ShiftTimeSync0.Value != -50000 ||
		!in.CycleTimeSync0.HasFactor || in.CycleTimeSync0.Factor != 1 {
		t.Errorf("input based mode %+v", in)
	}
}

// TestDriveFile checks the file written the other way: a default
// namespace, decimal numbers, true/false, a profile per channel.
func TestDriveFile(t *testing.T) {
	f := readTestFile(t, "testdata/cia402-drive.xml")
	d := f.Devices[0]
	if f.Vendor.ID != 0x00ECA6E7 || d.ProductCode != 0x402 || d.RevisionNo != 0x20000 {
		t.Fatalf("identity %#x %#x %#x", f.Vendor.ID, d.ProductCode, d.RevisionNo)
	}
	if len(d.Profiles) != 1 || d.Profiles[0].Channels[0].ProfileNo != 402 {
		t.Errorf("profiles %+v", d.Profiles)
	}
	if sm := d.SyncManagers[2]; sm.Type != SMOutputs || sm.StartAddress != 0x1800 || !sm.Enable || sm.DefaultSize != 0 {
		t.Errorf("SM2 %+v", sm)
	}
	if p := d.RxPDOs[0]; p.SyncManager != 2 || p.Fixed || !slices.Equal(p.Exclude, []uint16{0x1601}) || p.BitLen() != 112 {
		t.Errorf("RxPDO %+v (%d bits)", p, p.BitLen())
	}
	mode := d.DC.OpModes[0]
	if mode.AssignActivate != 0x300 || len(mode.SyncManagers) != 2 || mode.SyncManagers[1].PDOs[0] != 0x1A00 {
		t.Errorf("DcSync %+v", mode)
	}
	if m := d.Mailbox; m.Protocols != ProtocolCoE|ProtocolEoE|ProtocolFoE || !m.EoE.IP || !m.CoE.InitCmds[0].CompleteAccess {
		t.Errorf("mailbox %+v", m)
	}
	o := d.Dictionary().Object(0x6502)
	if e := o.Entry(0); e == nil || !bytes.Equal(e.Default, []byte{0xA0, 0x03, 0, 0}) {
		t.Errorf("0x6502 %+v", o)
	}
	if o := d.Dictionary().Object(0x6060); !bytes.Equal(o.Entries[0].Default, []byte{8}) || o.Entries[0].Flags.PDOMapping != MapRx {
		t.Errorf("0x6060 %+v", o)
	}
	var paths []string
	for _, w := range f.Warnings {
		paths = append(paths, w.Path)
	}
	want := []string{"EtherCATInfo/Descriptions/Devices/Device/Info/Port", "EtherCATInfo/Descriptions/Devices/Device/Slots"}
	if !slices.Equal(paths, want) {
		t.Errorf("warnings %v, want %v", f.Warnings, want)
	}
}

// TestLatin1Names checks that the ISO-8859-1 files' names arrive as UTF-8.
func TestLatin1Names(t *testing.T) {
	f := readTestFile(t, "testdata/beckhoff/Beckhoff EK11xx.xml")
	ek1110 := f.Devices[2]
	if got := ek1110.Name[1]; got.LcID != 1031 || got.Value != "EK1110 EtherCAT-Verlängerung" {
		t.Errorf("German name %+v", got)
	}
	if f.Vendor.Name.String() != "Beckhoff Automation GmbH & Co. KG" {
		t.Errorf("vendor %q", f.Vendor.Name)
	}
}

func TestTextsString(t *testing.T) {
	tests := []struct {
		in   Texts
		want string
	}{
		{nil, ""},
		{Texts{{1031, "de"}, {1033, "en"}}, "en"},
		{Texts{{1031, "de"}, {0, "plain"}}, "plain"},
		{Texts{{1031, "de"}, {1036, "fr"}}, "de"},
	}
	for _, tt := range tests {
		if got := tt.in.String(); got != tt.want {
			t.Errorf("%v.String() = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPrefixedNamespace reads a file whose elements all carry a prefix.
func TestPrefixedNamespace(t *testing.T) {
	doc := `<?xml version="1.0"?>
<e:EtherCATInfo xmlns:e="urn:x"><e:Vendor><e:Id>#x2</e:Id></e:Vendor><e:Descriptions><e:Devices>
<e:Device><e:Type ProductCode="7" RevisionNo="-1">X1</e:Type><e:Sm StartAddress="#x1000" Enable="1">Inputs</e:Sm></e:Device>
</e:Devices></e:Descriptions></e:EtherCATInfo>`
	f, err := Read(strings.NewReader(doc), "ns.xml", Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := f.Devices[0]
	if f.Vendor.ID != 2 || d.Type != "X1" || d.ProductCode != 7 || d.RevisionNo != 0xFFFFFFFF || d.SyncManagers[0].StartAddress != 0x1000 {
		t.Errorf("read %+v %+v", f.Vendor, d)
	}
}

// TestReadRefuses checks that bad files are refused with an error that
// says where and what, and no File.
func TestReadRefuses(t *testing.T) {
	wrap := func(device string) string {
		return `<EtherCATInfo><Vendor><Id>2</Id></Vendor><Descriptions><Devices>` + device + `</Devices></Descriptions></EtherCATInfo>`
	}
	tests := []struct {
		name, doc string
		kind      error
		want      string
	}{
		{"bad product code", wrap("\n<Device>\n<Type ProductCode=\"#x04G\" RevisionNo=\"1\">EL9</Type></Device>"), ErrValue,
			`x.xml:3:42: EtherCATInfo/Descriptions/Devices/Device(EL9)/Type@ProductCode: value "#x04G": not a number`},
		{"no product code", wrap(`<Device><Type RevisionNo="1">EL9</Type></Device>`), ErrMissing, "ProductCode missing"},
		{"no type", wrap(`<Device><Name>x</Name></Device>`), ErrMissing, "Device: required <Type> missing"},
		{"bad sm type", wrap(`<Device><Type ProductCode="1" RevisionNo="1">A</Type><Sm StartAddress="0">Output</Sm></Device>`), ErrValue,
			`Device(A)/Sm: value "Output": allowed: MBoxOut, MBoxIn, Outputs, Inputs`},
		{"sm address out of range", wrap(`<Device><Type ProductCode="1" RevisionNo="1">A</Type><Sm StartAddress="#x10000">Inputs</Sm></Device>`), ErrValue,
			"Sm@StartAddress: value \"#x10000\": out of range: allowed 0 to 65535"},
		{"pdo entry bitlen", wrap(`<Device><Type ProductCode="1" RevisionNo="1">A</Type><TxPdo><Index>#x1a00</Index><Entry><Index>#x6000</Index><BitLen>x</BitLen></Entry></TxPdo></Device>`),
			ErrValue, "TxPdo/Entry/BitLen: value \"x\""},
		{"second device named", wrap(`<Device><Type ProductCode="1" RevisionNo="1">A</Type></Device><Device><Type ProductCode="1" RevisionNo="1">B</Type><Fmmu>Out</Fmmu></Device>`),
			ErrValue, "Device[2](B)/Fmmu"},
		{"bad access", wrap(`<Device><Type ProductCode="1" RevisionNo="1">A</Type><Profile><Dictionary><Objects><Object><Index>#x1000</Index><Name>n</Name><Type>UDINT</Type><BitSize>32</BitSize><Flags><Access>rx</Access></Flags></Object></Objects></Dictionary></Profile></Device>`),
			ErrValue, `Flags/Access: value "rx": allowed: ro, rw, wo`},
		{"vendor after descriptions", `<EtherCATInfo><Descriptions/><Vendor><Id>2</Id></Vendor></EtherCATInfo>`, ErrMissing, "<Vendor> must come before"},
		{"no vendor id", `<EtherCATInfo><Vendor><Name>x</Name></Vendor></EtherCATInfo>`, ErrMissing, "Vendor: required <Id> missing"},
		{"init cmd without transition", wrap(`<Device><Type ProductCode="1" RevisionNo="1">A</Type><Mailbox><CoE><InitCmd><Index>1</Index><SubIndex>0</SubIndex></InitCmd></CoE></Mailbox></Device>`),
			ErrMissing, "required <Transition> missing"},
		{"bad transition", wrap(`<Device><Type ProductCode="1" RevisionNo="1">A</Type><Mailbox><CoE><InitCmd><Transition>XY</Transition><Index>1</Index><SubIndex>0</SubIndex></InitCmd></CoE></Mailbox></Device>`),
			ErrValue, `value "XY": allowed: IP, PI, PS`},
		{"bad hex", wrap(`<Device><Type ProductCode="1" RevisionNo="1">A</Type><Eeprom><ConfigData>0A0</ConfigData></Eeprom></Device>`), ErrValue, "not hexBinary"},
		{"an ENI", `<EtherCATConfig/>`, ErrRoot, "the root element is <EtherCATConfig>; this file kind has <EtherCATInfo>"},
		{"malformed", "<EtherCATInfo>\n<Vendor><Id>2</Id></Vendor>\n<Descriptions><Devices><Device></Devices>", ErrSyntax, "x.xml:3:"},
		{"xml bomb", `<!DOCTYPE EtherCATInfo [<!ENTITY a "1234567890"><!ENTITY b "&a;&a;&a;&a;&a;">]><EtherCATInfo>&b;</EtherCATInfo>`, ErrDoctype, "refused"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Read(strings.NewReader(tt.doc), "x.xml", Options{})
			if f != nil {
				t.Error("a File came with the error")
			}
			if !errors.Is(err, tt.kind) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant %v with %q", err, tt.kind, tt.want)
			}
		})
	}
}

// TestReadLimits checks the options bound what is read.
func TestReadLimits(t *testing.T) {
	doc := `<EtherCATInfo><Vendor><Id>2</Id></Vendor><Descriptions><Devices><Device><Type ProductCode="1" RevisionNo="1">A</Type>` +
		strings.Repeat(`<Fmmu>Inputs</Fmmu>`, 100) + `</Device></Devices></Descriptions></EtherCATInfo>`
	tests := []struct {
		opt  Options
		kind error
	}{
		{Options{MaxFileBytes: 100}, ErrTooLarge},
		{Options{MaxElements: 50}, ErrTooManyElements},
		{Options{MaxDeviceElements: 50}, ErrTooManyElements},
		{Options{MaxDepth: 4}, ErrTooDeep},
	}
	for _, tt := range tests {
		if _, err := Read(strings.NewReader(doc), "x.xml", tt.opt); !errors.Is(err, tt.kind) {
			t.Errorf("%+v: err = %v, want %v", tt.opt, err, tt.kind)
		}
	}
	if _, err := Read(strings.NewReader(doc), "x.xml", Options{}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// TestScanStopsOnTheCallersError checks that an error of each ends the
// scan and is returned as is.
func TestScanStopsOnTheCallersError(t *testing.T) {
	stop := errors.New("enough")
	n := 0
	_, err := Scan(strings.NewReader(wrapDevices(3)), "x.xml", Options{}, func(*File, *Device) error {
		n++
		return stop
	})
	if err != stop || n != 1 {
		t.Errorf("err %v after %d devices", err, n)
	}
}

// wrapDevices is a file of n minimal devices, product codes 1…n.
func wrapDevices(n int) string {
	var b strings.Builder
	b.WriteString(`<EtherCATInfo><Vendor><Id>2</Id></Vendor><Descriptions><Devices>`)
	for i := range n {
		b.WriteString(`<Device><Type ProductCode="` + strconv.Itoa(i+1) + `" RevisionNo="1">D</Type></Device>`)
	}
	b.WriteString(`</Devices></Descriptions></EtherCATInfo>`)
	return b.String()
}

package sii

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

func TestCRC8MatchesRealImages(t *testing.T) {
	for _, name := range realNames {
		img := testsupport.RealImage(t, name)
		if got, want := CRC8(img[:14]), img[0x0E]; got != want {
			t.Errorf("%s: CRC8 = %#02x, image stores %#02x", name, got, want)
		}
	}
	if got := CRC8(nil); got != 0xFF {
		t.Errorf("CRC8(nil) = %#02x, want the initial value 0xff", got)
	}
	// Flipping one header bit must change the CRC.
	img := testsupport.RealImage(t, "el2004")
	b := slices.Clone(img[:14])
	b[3] ^= 0x10
	if CRC8(b) == img[0x0E] {
		t.Error("CRC8 did not change when a header bit flipped")
	}
}

func TestParseRealImages(t *testing.T) {
	tests := []struct {
		file      string
		id        Identity
		name      string
		order     string
		ebus      int16
		protocols MailboxProtocols
		stdMbx    Mailbox
		sms       []SyncManager
		fmmus     []FMMUUsage
		tx, rx    int
		in, out   int
		smBits    []int
		layout    []CategoryType
	}{
		{
			file: "ek1100", id: Identity{2, 0x044C2C52, 0x00120000, 0},
			name: "EK1100 EtherCAT-Koppler (2A E-Bus)", order: "EK1100", ebus: -2000,
			fmmus:  []FMMUUsage{},
			layout: []CategoryType{CategoryStrings, CategoryGeneral},
		},
		{
			file: "el2004", id: Identity{2, 0x07D43052, 0x00100000, 0},
			name: "EL2004 4K. Dig. Ausgang 24V, 0.5A", order: "EL2004", ebus: 100,
			sms:   []SyncManager{{0x0F00, 0, 0x44, 0, 0x09, SMProcessDataOut}},
			fmmus: []FMMUUsage{FMMUOutputs},
			rx:    4, out: 4, smBits: []int{4},
			layout: []CategoryType{CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager, CategorySyncUnit, CategoryRxPDO},
		},
		{
			file: "el2828", id: Identity{2, 0x0B0C3052, 0x00110000, 0},
			name: "EL2828 8K. Dig. Ausgang 24V, 2A", order: "EL2828", ebus: 110,
			sms:   []SyncManager{{0x0F00, 1, 0x44, 0, 0x09, SMProcessDataOut}},
			fmmus: []FMMUUsage{FMMUOutputs},
			rx:    8, out: 8, smBits: []int{8},
			layout: []CategoryType{3, CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager, CategorySyncUnit, CategoryRxPDO},
		},
		{
			file: "el2889", id: Identity{2, 0x0B493052, 0x00110000, 0},
			name: "EL2889 16K. Dig. Ausgang 24V, 0.5A, negativ", order: "EL2889", ebus: 140,
			sms: []SyncManager{
				{0x0F00, 1, 0x44, 0, 0x09, SMProcessDataOut},
				{0x0F01, 1, 0x44, 0, 0x09, SMProcessDataOut},
			},
			fmmus: []FMMUUsage{FMMUOutputs},
			rx:    16, out: 16, smBits: []int{8, 8},
			layout: []CategoryType{CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager, CategorySyncUnit, CategoryRxPDO},
		},
		{
			// The EL2262 lists every oversampling variant of its PDOs on SM0/SM1, so the
			// SII-only sums count all of them, as SOEM does.
			file: "el2262", id: Identity{2, 0x08D63052, 0x00030000, 0},
			name: "EL2262 2K. Dig. Ausgang 24V, 1µs, DC Oversample", order: "EL2262", ebus: 70,
			sms: []SyncManager{
				{0x1000, 0, 0x64, 0, 0x09, SMProcessDataOut},
				{0x1200, 0, 0x64, 0, 0x09, SMProcessDataOut},
				{0x0998, 0, 0x00, 0, 0x04, SMProcessDataIn},
			},
			fmmus: []FMMUUsage{FMMUOutputs, FMMUOutputs, FMMUInputs},
			tx:    1, rx: 20, in: 32, out: 106, smBits: []int{53, 53, 32},
			layout: []CategoryType{1, CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager,
				CategoryFMMUExtended, CategorySyncUnit, CategoryTxPDO, CategoryRxPDO, CategoryDC},
		},
		{
			file: "akd", id: Identity{0x6A, 0x00414B44, 2, 0x99830093},
			name: "AKD EtherCAT Drive (CoE)", order: "AKD",
			protocols: ProtocolEoE | ProtocolCoE | ProtocolFoE,
			stdMbx:    Mailbox{0x1800, 0x400, 0x1C00, 0x400},
			sms: []SyncManager{
				{0x1800, 0x400, 0x26, 0, 0x01, SMMailboxOut},
				{0x1C00, 0x400, 0x22, 0, 0x01, SMMailboxIn},
				{0x1100, 0, 0x24, 0, 0x01, SMProcessDataOut},
				{0x1140, 0, 0x20, 0, 0x01, SMProcessDataIn},
			},
			fmmus: []FMMUUsage{FMMUOutputs, FMMUInputs, FMMUSyncManagerStatus},
			tx:    12, rx: 12, in: 48, out: 48, smBits: []int{0, 0, 48, 48},
			layout: []CategoryType{0x0800, 0x0801, CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager,
				CategorySyncUnit, CategoryTxPDO, CategoryRxPDO, CategoryDC},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d, err := Parse(testsupport.RealImage(t, tt.file))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if d.Header.Identity != tt.id {
				t.Errorf("identity = %+v, want %+v", d.Header.Identity, tt.id)
			}
			if d.Name() != tt.name || d.OrderCode() != tt.order {
				t.Errorf("name, order = %q, %q; want %q, %q", d.Name(), d.OrderCode(), tt.name, tt.order)
			}
			if d.General.EBusCurrent != tt.ebus {
				t.Errorf("E-Bus current = %d mA, want %d", d.General.EBusCurrent, tt.ebus)
			}
			if d.Header.MailboxProtocols != tt.protocols || d.Header.StandardMailbox != tt.stdMbx {
				t.Errorf("mailbox = %+v %v, want %+v %v", d.Header.StandardMailbox, d.Header.MailboxProtocols, tt.stdMbx, tt.protocols)
			}
			if d.Header.HasMailbox() != (tt.stdMbx != Mailbox{}) {
				t.Errorf("HasMailbox = %v", d.Header.HasMailbox())
			}
			if d.Header.EEPROMBytes() != 2048 || d.Header.Version != 1 {
				t.Errorf("EEPROM %d bytes version %d, want 2048 bytes version 1", d.Header.EEPROMBytes(), d.Header.Version)
			}
			if !reflect.DeepEqual(d.SyncManagers, tt.sms) {
				t.Errorf("SyncManagers = %+v, want %+v", d.SyncManagers, tt.sms)
			}
			if !slices.Equal(d.FMMUs, tt.fmmus) {
				t.Errorf("FMMUs = %v, want %v", d.FMMUs, tt.fmmus)
			}
			if len(d.TxPDOs) != tt.tx || len(d.RxPDOs) != tt.rx {
				t.Errorf("%d TxPDOs, %d RxPDOs; want %d, %d", len(d.TxPDOs), len(d.RxPDOs), tt.tx, tt.rx)
			}
			if d.InputBits() != tt.in || d.OutputBits() != tt.out {
				t.Errorf("input, output bits = %d, %d; want %d, %d", d.InputBits(), d.OutputBits(), tt.in, tt.out)
			}
			for sm, want := range tt.smBits {
				if got := d.SyncManagerBits(sm); got != want {
					t.Errorf("SyncManagerBits(%d) = %d, want %d", sm, got, want)
				}
			}
			var layout []CategoryType
			for _, c := range d.Categories {
				layout = append(layout, c.Type)
			}
			if !slices.Equal(layout, tt.layout) {
				t.Errorf("categories = %v, want %v", layout, tt.layout)
			}
			if err := d.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

func TestParseEL2004Details(t *testing.T) {
	d, err := Parse(testsupport.RealImage(t, "el2004"))
	if err != nil {
		t.Fatal(err)
	}
	var want []PDO
	for i, name := range []uint8{5, 7, 8, 9} {
		want = append(want, PDO{
			Index: 0x1600 + uint16(i), NameIndex: name, Flags: PDOMandatory | PDOFixedContent,
			Entries: []PDOEntry{{Index: 0x7000 + 0x10*uint16(i), SubIndex: 1, NameIndex: 6, DataType: 1, BitLength: 1}},
		})
	}
	if !reflect.DeepEqual(d.RxPDOs, want) {
		t.Errorf("RxPDOs =\n%+v\nwant\n%+v", d.RxPDOs, want)
	}
	for i, s := range []string{"EL2004", "DigOut", "Digitale Ausgangklemmen (EL2xxx)", "EL2004 4K. Dig. Ausgang 24V, 0.5A",
		"Channel 1", "Output", "Channel 2", "Channel 3", "Channel 4"} {
		if got, err := d.StringAt(uint8(i + 1)); got != s || err != nil {
			t.Errorf("String(%d) = %q, %v; want %q", i+1, got, err, s)
		}
	}
	g := d.General
	if g.GroupIndex != 2 || g.PhysicalPorts.Port(0) != PortEBus || g.PhysicalPorts.Port(1) != PortEBus || g.PhysicalPorts.Port(2) != PortUnused {
		t.Errorf("General = %+v", *g)
	}
}

func TestParseGeneralAndDC(t *testing.T) {
	ek, err := Parse(testsupport.RealImage(t, "ek1100"))
	if err != nil {
		t.Fatal(err)
	}
	if p := ek.General.PhysicalPorts; p.Port(0) != PortMII || p.Port(1) != PortEBus || p.Port(2) != PortMII || p.Port(3) != PortUnused {
		t.Errorf("EK1100 ports = %#04x, want MII, E-Bus, MII, unused", uint16(p))
	}

	akd, err := Parse(testsupport.RealImage(t, "akd"))
	if err != nil {
		t.Fatal(err)
	}
	if g := akd.General; g.CoEDetails != CoESDO|CoEPDOAssign|CoEPDOConfig || g.FoEDetails != 1 || g.DS402Channels != 1 {
		t.Errorf("AKD General = %+v", *g)
	}
	if p := akd.Header.MailboxProtocols; !p.Has(ProtocolCoE|ProtocolFoE) || p.Has(ProtocolCoE|ProtocolSoE) {
		t.Errorf("protocols %v: Has is wrong", p)
	}
	if got := akd.Header.MailboxProtocols.String(); got != "EoE|CoE|FoE" {
		t.Errorf("protocols = %q", got)
	}
	if len(akd.DC) != 2 || akd.DC[0].AssignActivate != 0x0300 {
		t.Errorf("AKD DC = %+v, want 2 modes, the first with AssignActivate 0x0300", akd.DC)
	} else if name, _ := akd.StringAt(akd.DC[0].NameIndex); name != "DcSync" {
		t.Errorf("AKD DC[0] name = %q, want DcSync", name)
	}

	el, err := Parse(testsupport.RealImage(t, "el2262"))
	if err != nil {
		t.Fatal(err)
	}
	wantDC := DCSync{AssignActivate: 0x0730, Sync0CycleFactor: -8, Sync1CycleFactor: -1, NameIndex: 6}
	if len(el.DC) != 4 || el.DC[1] != wantDC {
		t.Errorf("EL2262 DC = %+v, want 4 modes, the second %+v", el.DC, wantDC)
	}
	// The raw string holds ISO 8859-1 "µ"; StringAt returns it raw, Name as UTF-8.
	if raw, _ := el.StringAt(el.General.NameIndex); raw != "EL2262 2K. Dig. Ausgang 24V, 1\xb5s, DC Oversample" {
		t.Errorf("raw name = %q", raw)
	}
}

func TestParseErrors(t *testing.T) {
	el2004 := testsupport.RealImage(t, "el2004")
	end := endMarker(t, el2004)
	// Byte offsets in el2004.bin: the Strings category header at 0x80 (its first string's
	// length byte at 0x85), the RxPDO category header at 0x142 (its size word at 0x144,
	// its first PDO's entry count at 0x148).
	withByte := func(off int, v byte) []byte {
		b := slices.Clone(el2004)
		b[off] = v
		return b
	}
	tests := []struct {
		name string
		img  []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"header only", el2004[:HeaderSize], ErrTruncated},
		{"cut before end marker", el2004[:end], ErrTruncated},
		{"cut inside a category", el2004[:0x100], ErrTruncated},
		{"category size overruns image", withByte(0x145, 0x7F), ErrTruncated},
		{"string overruns category", withByte(0x85, 0xF0), ErrMalformed},
		{"string count overruns category", withByte(0x84, 0xF0), ErrMalformed},
		{"PDO entries overrun category", withByte(0x148, 9), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Parse(tt.img)
			if !errors.Is(err, tt.want) {
				t.Errorf("Parse error = %v, want %v", err, tt.want)
			}
			if d != nil {
				t.Error("Parse returned a Device with a structural error")
			}
		})
	}
}

func TestParseChecksumError(t *testing.T) {
	img := slices.Clone(testsupport.RealImage(t, "el2004"))
	img[0x08] = 0x07 // station alias: covered by the checksum
	d, err := Parse(img)
	var ce *ChecksumError
	if !errors.As(err, &ce) {
		t.Fatalf("Parse error = %v, want a *ChecksumError", err)
	}
	if !strings.Contains(err.Error(), "checksum 0xd8") {
		t.Errorf("error text %q does not name the stored checksum", err)
	}
	if ce.Got != 0xD8 || ce.Want != CRC8(img[:14]) || ce.Want == ce.Got {
		t.Errorf("ChecksumError = %+v", *ce)
	}
	if d == nil || d.Header.StationAlias != 7 || d.Name() != "EL2004 4K. Dig. Ausgang 24V, 0.5A" {
		t.Fatalf("Parse did not return the parsed Device with the checksum error: %+v", d)
	}
	// Encode writes the correct checksum.
	out, err := Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Parse(out); err != nil {
		t.Errorf("Parse(Encode(d)) = %v, want a good checksum", err)
	}
}

func TestStringIndexAndValidate(t *testing.T) {
	d, err := Parse(testsupport.RealImage(t, "el2004"))
	if err != nil {
		t.Fatal(err)
	}
	if s, err := d.StringAt(0); s != "" || err != nil {
		t.Errorf("String(0) = %q, %v; want none", s, err)
	}
	_, err = d.StringAt(10)
	var se *StringIndexError
	if !errors.As(err, &se) || se.Index != 10 || se.Count != 9 {
		t.Errorf("String(10) error = %v, want index 10 of 9", err)
	}

	d.General.NameIndex = 200
	d.RxPDOs[1].SyncManager = 3
	d.RxPDOs[2].Entries[0].NameIndex = 10
	if d.Name() != "" {
		t.Errorf("Name with a dangling index = %q, want empty", d.Name())
	}
	err = d.Validate()
	if !errors.As(err, &se) {
		t.Fatalf("Validate = %v, want a *StringIndexError among the errors", err)
	}
	for _, want := range []string{"General name", "SyncManager 3 does not exist", "entry 0x7020:1 name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %q", err, want)
		}
	}
	d.RxPDOs[1].SyncManager = NoSyncManager
	d.General.NameIndex = 4
	d.RxPDOs[2].Entries[0].NameIndex = 6
	if err := d.Validate(); err != nil {
		t.Errorf("Validate after repair = %v", err)
	}
}

func TestStringers(t *testing.T) {
	tests := []struct{ got, want string }{
		{CategoryRxPDO.String(), "RxPDO"},
		{CategoryType(0x0800).String(), "Category(0x0800)"},
		{FMMUSyncManagerStatus.String(), "SyncManager status"},
		{FMMUUsage(0xFF).String(), "unused"},
		{SMMailboxIn.String(), "mailbox in"},
		{SyncManagerType(9).String(), "SyncManagerType(9)"},
		{MailboxProtocols(0).String(), "none"},
		{(ProtocolCoE | 0x100).String(), "CoE|0x0100"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("String() = %q, want %q", tt.got, tt.want)
		}
	}
}

func BenchmarkCRC8(b *testing.B) {
	img := testsupport.RealImage(b, "el2004")
	b.ReportAllocs()
	for b.Loop() {
		CRC8(img[:14])
	}
}

func BenchmarkParse(b *testing.B) {
	img := testsupport.RealImage(b, "akd")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(img); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSyncManagerTypeNames pins every name: String is generated (stringer).
func TestSyncManagerTypeNames(t *testing.T) {
	want := "unused|mailbox out|mailbox in|process data out|process data in|SyncManagerType(5)"
	var got []string
	for _, st := range []SyncManagerType{SMUnused, SMMailboxOut, SMMailboxIn, SMProcessDataOut, SMProcessDataIn, 5} {
		got = append(got, st.String())
	}
	if g := strings.Join(got, "|"); g != want {
		t.Errorf("names %q, want %q", g, want)
	}
}

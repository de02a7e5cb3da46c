package sii

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/ecagent/ecagent/internal/testsupport"
)

func TestRoundTripRealImages(t *testing.T) {
	for _, name := range realNames {
		t.Run(name, func(t *testing.T) {
			img := testsupport.RealImage(t, name)
			d, err := Parse(img)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Encode(d)
			if err != nil {
				t.Fatal(err)
			}
			end := endMarker(t, img) + 2
			if len(out) != len(img) {
				t.Fatalf("encoded %d bytes, image has %d", len(out), len(img))
			}
			if i := firstDiff(out[:end], img[:end]); i >= 0 {
				t.Fatalf("encoded image differs at byte %#x: %#02x, want %#02x", i, out[i], img[i])
			}
			for i := end; i < len(out); i++ {
				if out[i] != 0xFF {
					t.Fatalf("byte %#x after the end marker = %#02x, want 0xff", i, out[i])
				}
			}
			d2, err := Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d, d2) {
				t.Error("Parse(Encode(d)) differs from d")
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// el2004Model is an EL2004 described in Go, as the simulator builds device models.
func el2004Model() *Device {
	d := &Device{
		Header: Header{
			PDIControl: 0x0104,
			PDIConfig2: 0x000F,
			Identity:   Identity{VendorID: 2, ProductCode: 0x07D43052, RevisionNumber: 0x00100000},
			Version:    1,
		},
		Strings: []string{"EL2004", "DigOut", "EL2004 4K. Dig. Ausgang 24V, 0.5A", "Output"},
		General: &General{GroupIndex: 2, OrderIndex: 1, NameIndex: 3, EBusCurrent: 100,
			PhysicalPorts: PortEBus | PortEBus<<4},
		FMMUs:        []FMMUUsage{FMMUOutputs},
		SyncManagers: []SyncManager{{StartAddress: 0x0F00, Control: 0x44, Enable: 0x09, Type: SMProcessDataOut}},
	}
	for i := range 4 {
		d.RxPDOs = append(d.RxPDOs, PDO{
			Index: 0x1600 + uint16(i), Flags: PDOMandatory | PDOFixedContent,
			Entries: []PDOEntry{{Index: 0x7000 + 0x10*uint16(i), SubIndex: 1, NameIndex: 4, DataType: 1, BitLength: 1}},
		})
	}
	return d
}

func TestEncodeModel(t *testing.T) {
	m := el2004Model()
	if err := m.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	img, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(img) != 2048 || binary.LittleEndian.Uint16(img[0x7C:]) != 15 {
		t.Errorf("image of %d bytes with EEPROM size word %d, want 2048 bytes and 15", len(img), binary.LittleEndian.Uint16(img[0x7C:]))
	}
	if m.Header.EEPROMSize != 0 {
		t.Error("Encode changed the Device")
	}
	d, err := Parse(img)
	if err != nil {
		t.Fatalf("Parse of encoded model: %v", err)
	}
	var layout []CategoryType
	for _, c := range d.Categories {
		layout = append(layout, c.Type)
	}
	if want := []CategoryType{CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager, CategoryRxPDO}; !slices.Equal(layout, want) {
		t.Errorf("categories = %v, want %v", layout, want)
	}
	d.Categories, d.Header.Checksum, d.Header.EEPROMSize = nil, 0, 0
	if !reflect.DeepEqual(d, m) {
		t.Errorf("parsed model =\n%+v\nwant\n%+v", d, m)
	}
	if d.Name() != "EL2004 4K. Dig. Ausgang 24V, 0.5A" || d.OutputBits() != 4 || d.SyncManagerBits(0) != 4 {
		t.Errorf("name %q, output bits %d, SM0 bits %d", d.Name(), d.OutputBits(), d.SyncManagerBits(0))
	}
	// The model's SII should say what the real EL2004's says about process data.
	real, err := Parse(testsupport.RealImage(t, "el2004"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(d.SyncManagers, real.SyncManagers) || d.Header.Identity != real.Header.Identity {
		t.Error("model and real EL2004 differ in SyncManagers or identity")
	}
}

func TestEncodeSizes(t *testing.T) {
	big := el2004Model()
	for i := range 40 {
		big.Strings = append(big.Strings, string(rune('A'+i%26))+" a string long enough to need some room in the EEPROM")
	}
	tests := []struct {
		name     string
		size     uint16
		wantLen  int
		wantFail bool
	}{
		{"model default", 0, 2048, false},
		{"explicit 4 KiB", 31, 4096, false},
		{"too small", 1, 0, true},
		{"beyond word addresses", 0x7FFF, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := el2004Model()
			m.Header.EEPROMSize = tt.size
			img, err := Encode(m)
			if (err != nil) != tt.wantFail || len(img) != tt.wantLen {
				t.Errorf("Encode = %d bytes, %v; want %d bytes, failure %v", len(img), err, tt.wantLen, tt.wantFail)
			}
		})
	}
	img, err := Encode(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(img) != 4096 || binary.LittleEndian.Uint16(img[0x7C:]) != 31 {
		t.Errorf("large model: %d bytes, size word %d; want 4096 and 31", len(img), binary.LittleEndian.Uint16(img[0x7C:]))
	}
}

func TestEncodeRejectsWhatDoesNotFit(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Device)
	}{
		{"long string", func(d *Device) { d.Strings[0] = string(make([]byte, 256)) }},
		{"too many strings", func(d *Device) { d.Strings = make([]string, 256) }},
		{"too many entries", func(d *Device) { d.RxPDOs[0].Entries = make([]PDOEntry, 256) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := el2004Model()
			tt.modify(d)
			if img, err := Encode(d); err == nil || img != nil {
				t.Errorf("Encode = %d bytes, %v; want an error", len(img), err)
			}
		})
	}
}

func TestEncodeFollowsEdits(t *testing.T) {
	parse := func(t *testing.T) *Device {
		d, err := Parse(testsupport.RealImage(t, "el2004"))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	reparse := func(t *testing.T, d *Device) *Device {
		img, err := Encode(d)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := Parse(img)
		if err != nil {
			t.Fatal(err)
		}
		return d2
	}
	types := func(d *Device) []CategoryType {
		var ts []CategoryType
		for _, c := range d.Categories {
			ts = append(ts, c.Type)
		}
		return ts
	}

	t.Run("added PDO and DC", func(t *testing.T) {
		d := parse(t)
		d.RxPDOs = append(d.RxPDOs, PDO{Index: 0x1604, Entries: []PDOEntry{{Index: 0x7040, SubIndex: 1, BitLength: 1}}})
		d.DC = []DCSync{{AssignActivate: 0x0300}}
		d.Header.Identity.SerialNumber = 42
		d2 := reparse(t, d)
		if len(d2.RxPDOs) != 5 || d2.OutputBits() != 5 || len(d2.DC) != 1 || d2.Header.Identity.SerialNumber != 42 {
			t.Errorf("%d RxPDOs, %d output bits, %d DC modes, serial %d", len(d2.RxPDOs), d2.OutputBits(), len(d2.DC), d2.Header.Identity.SerialNumber)
		}
		want := []CategoryType{CategoryStrings, CategoryGeneral, CategoryFMMU, CategorySyncManager, CategorySyncUnit, CategoryRxPDO, CategoryDC}
		if got := types(d2); !slices.Equal(got, want) {
			t.Errorf("categories = %v, want %v", got, want)
		}
	})
	t.Run("removed PDOs and General", func(t *testing.T) {
		d := parse(t)
		d.RxPDOs, d.General = nil, nil
		d2 := reparse(t, d)
		want := []CategoryType{CategoryStrings, CategoryFMMU, CategorySyncManager, CategorySyncUnit}
		if got := types(d2); !slices.Equal(got, want) {
			t.Errorf("categories = %v, want %v", got, want)
		}
		if d2.General != nil || d2.RxPDOs != nil {
			t.Error("removed content came back")
		}
	})
}

func TestEncodeSplitCategories(t *testing.T) {
	m := el2004Model()
	m.Categories = []Category{
		{Type: CategoryStrings, Count: 4},
		{Type: CategoryRxPDO, Count: 1},
		{Type: 0x0800, Raw: []byte{1, 2, 3}}, // odd: padded with 0xFF
		{Type: CategoryRxPDO, Count: 1},      // the last RxPDO category takes the rest
		{Type: CategoryGeneral, Count: 16},   // an older, shorter General
		{Type: CategoryGeneral, Raw: []byte{}},
	}
	img, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(img)
	if err != nil {
		t.Fatal(err)
	}
	want := []Category{
		{Type: CategoryStrings, Count: 4},
		{Type: CategoryRxPDO, Count: 1},
		{Type: 0x0800, Raw: []byte{1, 2, 3, 0xFF}},
		{Type: CategoryRxPDO, Count: 3},
		{Type: CategoryGeneral, Count: 16},
		{Type: CategoryGeneral, Raw: []byte{}},
		{Type: CategoryFMMU, Count: 1, Tail: []byte{0xFF}},
		{Type: CategorySyncManager, Count: 1},
	}
	if !reflect.DeepEqual(d.Categories, want) {
		t.Errorf("categories =\n%+v\nwant\n%+v", d.Categories, want)
	}
	if !reflect.DeepEqual(d.RxPDOs, m.RxPDOs) || d.Name() != m.Name() || d.General.EBusCurrent != 100 {
		t.Errorf("split categories lost content: %d RxPDOs, name %q, General %+v", len(d.RxPDOs), d.Name(), d.General)
	}
}

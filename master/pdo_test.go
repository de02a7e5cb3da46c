package master

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

func TestPDOAssignmentSource(t *testing.T) {
	b := newPDOBench(t, []string{"EK1100", "EL2004", "EL3004", "EL4008", "EL1014"}, Config{})
	if err := b.bringUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		pos             int
		source          string
		outBits, inBits int
		rx, tx          []uint16
	}{
		{0, PDOSourceSII, 0, 0, nil, nil},
		{1, PDOSourceSII, 4, 0, []uint16{0x1600, 0x1601, 0x1602, 0x1603}, nil},
		{2, PDOSourceCoE, 0, 128, nil, []uint16{0x1A00, 0x1A02, 0x1A04, 0x1A06}},
		{3, PDOSourceCoE, 128, 0, []uint16{0x1600, 0x1601, 0x1602, 0x1603, 0x1604, 0x1605, 0x1606, 0x1607}, nil},
		{4, PDOSourceSII, 0, 4, nil, []uint16{0x1A00, 0x1A01, 0x1A02, 0x1A03}},
	}
	indexes := func(pdos []PDO) []uint16 {
		var out []uint16
		for _, p := range pdos {
			out = append(out, p.Index)
		}
		return out
	}
	for _, tt := range tests {
		s := b.m.Slaves()[tt.pos]
		t.Run(s.displayName(), func(t *testing.T) {
			if s.PDOSource != tt.source {
				t.Errorf("PDOSource = %q, want %q", s.PDOSource, tt.source)
			}
			if s.OutputBits != tt.outBits || s.Outputs.Len != tt.outBits || s.InputBits != tt.inBits || s.Inputs.Len != tt.inBits {
				t.Errorf("bits out %d (range %v) in %d (range %v), want %d and %d",
					s.OutputBits, s.Outputs, s.InputBits, s.Inputs, tt.outBits, tt.inBits)
			}
			if got := indexes(s.RxPDOs); !reflect.DeepEqual(got, tt.rx) {
				t.Errorf("RxPDOs %#04x, want %#04x", got, tt.rx)
			}
			if got := indexes(s.TxPDOs); !reflect.DeepEqual(got, tt.tx) {
				t.Errorf("TxPDOs %#04x, want %#04x", got, tt.tx)
			}
			// What CoE reports is what the SII assigns by default, entry
			// for entry, and the offsets follow each other.
			var rx, tx []PDO
			for _, p := range siiPDOs(s) {
				if p.Index < txPDOFirst {
					rx = append(rx, p)
				} else {
					tx = append(tx, p)
				}
			}
			if !reflect.DeepEqual(s.RxPDOs, withOffsets(rx)) {
				t.Errorf("RxPDOs\n%+v, want the SII's\n%+v", s.RxPDOs, withOffsets(rx))
			}
			if !reflect.DeepEqual(s.TxPDOs, withOffsets(tx)) {
				t.Errorf("TxPDOs\n%+v, want the SII's\n%+v", s.TxPDOs, withOffsets(tx))
			}
			line := fmt.Sprintf("msg=\"PDO assignment\" slave=%q source=%s", s.String(), tt.source)
			if !strings.Contains(b.logs.String(), line) {
				t.Errorf("log lacks %s", line)
			}
		})
	}
}

// TestPDOEntryOffsets writes known inputs in the simulated devices and
// reads them through InputEntry, and writes outputs through OutputEntry
// and finds them in the devices, for devices with several SyncManagers
// of one direction, analog terminals and bit-packed digital ones.
func TestPDOEntryOffsets(t *testing.T) {
	devices := []string{"EK1100", "EL1014", twoInputSMImage(t), "EL3004", filepath.Join(pdoRealSII, "el2262.bin"),
		"EL4008", "EL2004", filepath.Join(pdoRealSII, "el2889.bin"), "EL2004"}
	b := newPDOBench(t, devices, Config{})
	if err := b.bringUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	slaves, img := b.m.Slaves(), b.m.Image()

	// Inputs.
	b.devs[1].SetInputs([]byte{0b1001})
	b.devs[2].SetInputs([]byte{0b0110_0101, 0b1010}) // channels 1–12
	el3004 := make([]byte, 16)
	for c := range 4 {
		binary.LittleEndian.PutUint16(el3004[4*c+2:], uint16(0x1111*(c+1)))
	}
	el3004[4] = 0x02 // channel 2 underrange
	b.devs[3].SetInputs(el3004)
	b.devs[4].SetInputs([]byte{0x78, 0x56, 0x34, 0x12})
	b.cycle(t)
	type in struct {
		pos   int
		index uint16
		sub   uint8
		want  uint64
	}
	ins := []in{
		{1, 0x6000, 1, 1}, {1, 0x6010, 1, 0}, {1, 0x6030, 1, 1},
		{3, 0x6000, 0x11, 0x1111}, {3, 0x6010, 0x11, 0x2222}, {3, 0x6020, 0x11, 0x3333}, {3, 0x6030, 0x11, 0x4444},
		{3, 0x6010, 2, 1}, {3, 0x6000, 2, 0},
		{4, 0x1D09, 0x98, 0x12345678},
	}
	for c := range 12 {
		ins = append(ins, in{2, 0x6000 + 0x10*uint16(c), 1, uint64(0b1010_0110_0101 >> c & 1)})
	}
	for _, tt := range ins {
		s := slaves[tt.pos]
		e, ok := s.InputEntry(tt.index, tt.sub)
		if !ok {
			t.Errorf("%v: InputEntry(%#04x:%02x) not found", s, tt.index, tt.sub)
			continue
		}
		if v, err := img.InputValue(s, e.Offset, e.Bits); err != nil || v != tt.want {
			t.Errorf("%v: %#04x:%02x at bit %d: %#x, %v, want %#x", s, tt.index, tt.sub, e.Offset, v, err, tt.want)
		}
	}

	// Outputs.
	type out struct {
		pos   int
		index uint16
		sub   uint8
		v     uint64
	}
	outs := []out{{6, 0x7010, 1, 1}, {8, 0x7030, 1, 1}, {4, 0x7800, 2, 0xBEEF}, {4, 0x7200, 1, 0xA5}, {4, 0x7000, 2, 1},
		{7, 0x7050, 1, 1}, {7, 0x70C0, 1, 1}}
	for c := range 8 {
		outs = append(outs, out{5, 0x7000 + 0x10*uint16(c), 1, uint64(0x100*c + 7)})
	}
	for _, tt := range outs {
		s := slaves[tt.pos]
		e, ok := s.OutputEntry(tt.index, tt.sub)
		if !ok {
			t.Fatalf("%v: OutputEntry(%#04x:%02x) not found", s, tt.index, tt.sub)
		}
		if err := img.SetOutputValue(s, e.Offset, e.Bits, tt.v); err != nil {
			t.Fatal(err)
		}
	}
	b.cycle(t)
	b.cycle(t)
	for _, tt := range outs {
		s := slaves[tt.pos]
		e, _ := s.OutputEntry(tt.index, tt.sub)
		// The device's Outputs lay its SyncManagers' bits one after the
		// other as a bit-granular master maps them: the entry's offset.
		if got := getBits(b.devs[tt.pos].Outputs(), e.Offset, e.Bits); got != tt.v {
			t.Errorf("%v: %#04x:%02x at bit %d: device has %#x, want %#x", s, tt.index, tt.sub, e.Offset, got, tt.v)
		}
	}
	// Entries no PDO maps, and gaps, are not found.
	for _, c := range []struct {
		pos   int
		index uint16
		sub   uint8
	}{{3, 0x6000, 0x12}, {3, 0, 0}, {1, 0x7000, 1}} {
		if e, ok := slaves[c.pos].InputEntry(c.index, c.sub); ok {
			t.Errorf("%v: InputEntry(%#04x:%02x) = %+v, want none", slaves[c.pos], c.index, c.sub, e)
		}
	}
	if e, ok := slaves[6].OutputEntry(0x6000, 1); ok {
		t.Errorf("EL2004 OutputEntry(0x6000:01) = %+v, want none", e)
	}
}

// TestPDOOffsetsByteMappedESC checks that the entry offsets follow the
// place mapProcessData gives a slave whose ESC maps whole bytes only: each
// run of SyncManagers starts on a byte of its own.
func TestPDOOffsetsByteMappedESC(t *testing.T) {
	s := model("EL9999", []sii.FMMUUsage{sii.FMMUInputs, sii.FMMUInputs},
		ProcessDataSM{Index: 0, Type: sii.SMProcessDataIn, Start: 0x1000, Bits: 4},
		ProcessDataSM{Index: 1, Type: sii.SMProcessDataIn, Start: 0x1080, Bits: 3})
	s.ESC.Features |= esc.FeatureFMMUBitOperation
	s.setPDOs([]PDO{
		{Index: 0x1A00, SM: 0, Entries: []PDOEntry{{Index: 0x6000, SubIndex: 1, Bits: 1}, {Bits: 3}}},
		{Index: 0x1A01, SM: 1, Entries: []PDOEntry{{Index: 0x6010, SubIndex: 1, Bits: 3}}},
	}, PDOSourceCoE)
	if _, err := mapProcessData([]*Slave{el1014(), s}, maxLRWData); err != nil {
		t.Fatal(err)
	}
	if s.Inputs != (BitRange{Offset: 8, Len: 16}) {
		t.Errorf("inputs %+v, want bytes 1–2", s.Inputs)
	}
	if e, _ := s.InputEntry(0x6010, 1); e.Offset != 8 {
		t.Errorf("0x6010:01 at bit %d, want 8 (the second run's own byte)", e.Offset)
	}
	if e, _ := s.InputEntry(0x6000, 1); e.Offset != 0 {
		t.Errorf("0x6000:01 at bit %d, want 0", e.Offset)
	}
}

// TestPDOsFromSIIWhenNotRead checks that mapping an image whose slaves'
// assignment was never read gives them the SII's PDOs, placed.
func TestPDOsFromSIIWhenNotRead(t *testing.T) {
	s := model("EL1012", fmmuIn, ProcessDataSM{Index: 0, Type: sii.SMProcessDataIn, Start: 0x1000, Bits: 2})
	s.SII.TxPDOs = []sii.PDO{
		{Index: 0x1A00, SyncManager: 0, Entries: []sii.PDOEntry{{Index: 0x6000, SubIndex: 1, BitLength: 1}}},
		{Index: 0x1A01, SyncManager: 0, Entries: []sii.PDOEntry{{Index: 0x6010, SubIndex: 1, BitLength: 1}}},
		{Index: 0x1A02, SyncManager: sii.NoSyncManager, Entries: []sii.PDOEntry{{Index: 0x6020, SubIndex: 1, BitLength: 1}}},
	}
	if _, err := mapProcessData([]*Slave{el1014(), s}, maxLRWData); err != nil {
		t.Fatal(err)
	}
	want := []PDO{
		{Index: 0x1A00, SM: 0, Entries: []PDOEntry{{Index: 0x6000, SubIndex: 1, Bits: 1, Offset: 0}}},
		{Index: 0x1A01, SM: 0, Entries: []PDOEntry{{Index: 0x6010, SubIndex: 1, Bits: 1, Offset: 1}}},
	}
	if s.PDOSource != PDOSourceSII || !reflect.DeepEqual(s.TxPDOs, want) || s.RxPDOs != nil {
		t.Errorf("source %q, TxPDOs %+v, RxPDOs %+v; want sii, %+v, none", s.PDOSource, s.TxPDOs, s.RxPDOs, want)
	}
	if s.Inputs != (BitRange{Offset: 4, Len: 2}) {
		t.Errorf("inputs %+v, want bits 4–5", s.Inputs)
	}
}

// TestPDOAssignmentFallback checks what a slave that lacks assignment
// objects gets: the SII's assignment, unless the SyncManager the object
// is missing for has no PDOs anyway.
func TestPDOAssignmentFallback(t *testing.T) {
	tests := []struct {
		name    string
		device  string
		missing uint16
		source  string
		bits    int
	}{
		{"EL3004 without 0x1C13", "EL3004", 0x1C13, PDOSourceSII, 128},
		{"EL3004 without 0x1C12 (no outputs)", "EL3004", 0x1C12, PDOSourceCoE, 128},
		{"EL4008 without 0x1C12", "EL4008", 0x1C12, PDOSourceSII, 128},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newPDOBench(t, []string{"EK1100", tt.device}, Config{}, tt.missing)
			if err := b.bringUp(context.Background()); err != nil {
				t.Fatal(err)
			}
			s := b.m.Slaves()[1]
			if s.PDOSource != tt.source || s.InputBits+s.OutputBits != tt.bits {
				t.Errorf("source %q, bits %d+%d, want %q and %d", s.PDOSource, s.InputBits, s.OutputBits, tt.source, tt.bits)
			}
			if tt.source == PDOSourceSII && !strings.Contains(b.logs.String(), "PDO assignment not readable over CoE") {
				t.Error("the fallback is not logged")
			}
		})
	}
}

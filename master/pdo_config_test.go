package master

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"github.com/ecagent/ecagent/ethercat/coe"
)

func TestPDOReassign(t *testing.T) {
	tests := []struct {
		name   string
		tx     []PDOConfig
		inBits int
		tx0    []uint16
		values map[uint16]int // channel value object → byte in SetInputs
	}{
		{"two standard PDOs", []PDOConfig{{Index: 0x1A00}, {Index: 0x1A06}}, 64, []uint16{0x1A00, 0x1A06},
			map[uint16]int{0x6000: 2, 0x6030: 6}},
		{"compact PDOs", []PDOConfig{{Index: 0x1A01}, {Index: 0x1A03}, {Index: 0x1A05}}, 48, []uint16{0x1A01, 0x1A03, 0x1A05},
			map[uint16]int{0x6000: 0, 0x6010: 2, 0x6020: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newPDOBench(t, []string{"EK1100", "EL3004", "EL2004"},
				Config{PDO: []SlavePDOConfig{{Position: 1, TxPDOs: tt.tx}}})
			if err := b.bringUp(context.Background()); err != nil {
				t.Fatal(err)
			}
			s := b.m.Slaves()[1]
			if s.PDOSource != PDOSourceConfig || s.InputBits != tt.inBits || s.Inputs.Len != tt.inBits {
				t.Errorf("source %q, input bits %d (range %v), want config and %d", s.PDOSource, s.InputBits, s.Inputs, tt.inBits)
			}
			if got := len(b.m.Image().Inputs()); got != tt.inBits/8 {
				t.Errorf("input area %d bytes, want %d", got, tt.inBits/8)
			}
			if got := b.devs[1].InputSize(); got != tt.inBits/8 {
				t.Errorf("device InputSize %d, want %d", got, tt.inBits/8)
			}
			for i, p := range s.TxPDOs {
				if i >= len(tt.tx0) || p.Index != tt.tx0[i] {
					t.Errorf("TxPDOs[%d] = %#04x, want %#04x", i, p.Index, tt.tx0)
				}
			}
			in := make([]byte, tt.inBits/8)
			for obj, at := range tt.values {
				binary.LittleEndian.PutUint16(in[at:], obj^0x5A5A)
			}
			b.devs[1].SetInputs(in)
			b.cycle(t)
			for obj := range tt.values {
				e, ok := s.InputEntry(obj, 0x11)
				if !ok {
					t.Fatalf("InputEntry(%#04x:11) not found", obj)
				}
				if v, err := b.m.Image().InputValue(s, e.Offset, e.Bits); err != nil || v != uint64(obj^0x5A5A) {
					t.Errorf("%#04x:11 = %#x, %v, want %#x", obj, v, err, obj^0x5A5A)
				}
			}
			if _, ok := s.InputEntry(0x6030, 0x11); ok && tt.name == "compact PDOs" {
				t.Error("channel 4 still mapped")
			}
		})
	}
}

func TestPDORemap(t *testing.T) {
	entries := []PDOEntryConfig{{0x6010, 0x11, 16}, {0x6010, 1, 1}, {0x6010, 2, 1}, {0, 0, 6}, {0x6000, 0x11, 16}}
	b := newPDOBench(t, []string{"EL3004", "EL4008"}, Config{PDO: []SlavePDOConfig{
		{Position: 0, TxPDOs: []PDOConfig{{Index: 0x1A01, Entries: entries}, {Index: 0x1A04}}},
		{Position: 1, RxPDOs: []PDOConfig{{Index: 0x1603}, {Index: 0x1600}}},
	}})
	if err := b.bringUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := b.m.Slaves()[0]
	want := []PDOEntry{{0x6010, 0x11, 16, 0}, {0x6010, 1, 1, 16}, {0x6010, 2, 1, 17}, {0, 0, 6, 18}, {0x6000, 0x11, 16, 24}}
	if len(s.TxPDOs) != 2 || s.TxPDOs[0].Index != 0x1A01 || !reflect.DeepEqual(s.TxPDOs[0].Entries, want) {
		t.Fatalf("TxPDOs %+v, want 0x1a01 with %+v", s.TxPDOs, want)
	}
	if s.InputBits != 40+32 || s.TxPDOs[1].Entries[0].Offset != 40 {
		t.Errorf("input bits %d, 0x1a04 from bit %d, want 72 and 40", s.InputBits, s.TxPDOs[1].Entries[0].Offset)
	}
	in := []byte{0x22, 0x22, 0x01, 0x11, 0x11, 0x02, 0x00, 0x33, 0x33}
	b.devs[0].SetInputs(in)
	b.cycle(t)
	for _, c := range []struct {
		index uint16
		sub   uint8
		want  uint64
	}{{0x6010, 0x11, 0x2222}, {0x6010, 1, 1}, {0x6010, 2, 0}, {0x6000, 0x11, 0x1111}, {0x6020, 2, 1}, {0x6020, 0x11, 0x3333}} {
		e, ok := s.InputEntry(c.index, c.sub)
		if !ok {
			t.Errorf("InputEntry(%#04x:%02x) not found", c.index, c.sub)
			continue
		}
		if v, _ := b.m.Image().InputValue(s, e.Offset, e.Bits); v != c.want {
			t.Errorf("%#04x:%02x = %#x, want %#x", c.index, c.sub, v, c.want)
		}
	}
	// The EL4008's outputs in the new order: channel 4, then channel 1.
	ao := b.m.Slaves()[1]
	if ao.OutputBits != 32 || ao.PDOSource != PDOSourceConfig {
		t.Fatalf("EL4008 output bits %d, source %q, want 32, config", ao.OutputBits, ao.PDOSource)
	}
	for obj, v := range map[uint16]uint64{0x7030: 0x1234, 0x7000: 0x5678} {
		e, _ := ao.OutputEntry(obj, 1)
		if err := b.m.Image().SetOutputValue(ao, e.Offset, e.Bits, v); err != nil {
			t.Fatal(err)
		}
	}
	b.cycle(t)
	b.cycle(t)
	if got, want := b.devs[1].Outputs(), []byte{0x34, 0x12, 0x78, 0x56}; !bytes.Equal(got, want) {
		t.Errorf("EL4008 outputs % x, want % x", got, want)
	}
}

func TestPDOConfigErrors(t *testing.T) {
	devices := []string{"EK1100", "EL2004", "EL3004", "EL4008"}
	tests := []struct {
		name  string
		cfg   []SlavePDOConfig
		want  string
		abort coe.AbortCode // 0: not an abort
	}{
		{"no slave at the position", []SlavePDOConfig{{Position: 4, TxPDOs: []PDOConfig{{Index: 0x1A00}}}},
			"master: config PDO[0]: position 4: no slave there (the segment has 4, positions 0 to 3)", 0},
		{"negative position", []SlavePDOConfig{{Position: -1}},
			"master: config PDO[0]: position -1: no slave there (the segment has 4, positions 0 to 3)", 0},
		{"slave without CoE", []SlavePDOConfig{{Position: 2, TxPDOs: []PDOConfig{{Index: 0x1A00}}}, {Position: 1, RxPDOs: []PDOConfig{{Index: 0x1600}}}},
			"master: config PDO[1]: slave 1 (0x1002 EL2004) has no CoE mailbox: its PDO assignment cannot be changed", 0},
		{"position twice", []SlavePDOConfig{{Position: 2}, {Position: 2}},
			"master: config PDO[1]: position 2 is configured already by PDO[0]", 0},
		{"entry of 0 bits", []SlavePDOConfig{{Position: 2, TxPDOs: []PDOConfig{{Index: 0x1A01, Entries: []PDOEntryConfig{{0x6000, 0x11, 0}}}}}},
			"master: config PDO[0]: TxPDO 0x1a01 entry 1 (0x6000:11): 0 bits, want 1 to 64", 0},
		{"entry of 65 bits", []SlavePDOConfig{{Position: 2, TxPDOs: []PDOConfig{{Index: 0x1A01, Entries: []PDOEntryConfig{{0, 0, 65}}}}}},
			"master: config PDO[0]: TxPDO 0x1a01 entry 1 (0x0000:00): 65 bits, want 1 to 64", 0},
		{"RxPDO index as TxPDO", []SlavePDOConfig{{Position: 2, TxPDOs: []PDOConfig{{Index: 0x1600}}}},
			"master: config PDO[0]: TxPDO 0x1600: index outside 0x1a00 to 0x1bff", 0},
		{"longer than the SyncManager's area", []SlavePDOConfig{{Position: 2, TxPDOs: []PDOConfig{
			{Index: 0x1A01, Entries: repeatEntry(PDOEntryConfig{0, 0, 64}, 27)}}}},
			"master: config PDO[0]: slave 2 (0x1003 EL3004): TxPDOs of 1728 bits exceed the 213 bytes SyncManager 3 may take", 0},
		{"entry not mappable", []SlavePDOConfig{{Position: 2, TxPDOs: []PDOConfig{{Index: 0x1A01, Entries: []PDOEntryConfig{{0x6000, 0x12, 16}}}}}},
			"master: config PDO[0]: slave 2 (0x1003 EL3004) refused 0x1a01:01 = 0x60001210: SDO 0x1a01:01 aborted: " + coe.AbortNotMappable.String(),
			coe.AbortNotMappable},
		{"fixed mapping", []SlavePDOConfig{{Position: 3, RxPDOs: []PDOConfig{{Index: 0x1600, Entries: []PDOEntryConfig{{0x7000, 1, 16}}}}}},
			"master: config PDO[0]: slave 3 (0x1004 EL4008) refused 0x1600:00 = 0x0: SDO 0x1600:00 aborted: " + coe.AbortReadOnly.String(),
			coe.AbortReadOnly},
		{"unknown PDO", []SlavePDOConfig{{Position: 2, TxPDOs: []PDOConfig{{Index: 0x1A00}, {Index: 0x1A09}}}},
			"master: config PDO[0]: slave 2 (0x1003 EL3004) refused to tell the mapping of PDO 0x1a09: SDO 0x1a09:00 aborted: " + coe.AbortNoObject.String(),
			coe.AbortNoObject},
		{"unknown RxPDO", []SlavePDOConfig{{Position: 2, RxPDOs: []PDOConfig{{Index: 0x1600}}}},
			"master: config PDO[0]: slave 2 (0x1003 EL3004) refused to tell the mapping of PDO 0x1600: SDO 0x1600:00 aborted: " + coe.AbortNoObject.String(),
			coe.AbortNoObject},
		{"PDO not in the dictionary", []SlavePDOConfig{{Position: 2, TxPDOs: []PDOConfig{{Index: 0x1A09, Entries: []PDOEntryConfig{{0x6000, 0x11, 16}}}}}},
			"master: config PDO[0]: slave 2 (0x1003 EL3004) refused 0x1a09:00 = 0x0: SDO 0x1a09:00 aborted: " + coe.AbortNoObject.String(),
			coe.AbortNoObject},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newPDOBench(t, devices, Config{PDO: tt.cfg})
			err := b.bringUp(context.Background())
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error\n%v\nwant\n%s", err, tt.want)
			}
			var abort *coe.AbortError
			if got := errors.As(err, &abort); got != (tt.abort != 0) || got && abort.Code != tt.abort {
				t.Errorf("errors.As *coe.AbortError: %v %+v, want code %v", got, abort, tt.abort)
			}
			if b.m.Image() != nil {
				t.Error("the image was mapped in spite of the error")
			}
		})
	}
}

func repeatEntry(e PDOEntryConfig, n int) []PDOEntryConfig {
	out := make([]PDOEntryConfig, n)
	for i := range out {
		out[i] = e
	}
	return out
}

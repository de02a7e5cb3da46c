package sim

import (
	"encoding/binary"
	"testing"
)

// TestShippedAssignments: the AKD lists four PDOs in 0x1C12 and 0x1C13,
// the EK1914 two in 0x1C13, as the real devices ship.
func TestShippedAssignments(t *testing.T) {
	for _, c := range []struct {
		model string
		index uint16
		want  []uint16
	}{
		{"AKD", 0x1C12, []uint16{0x1600, 0x1601, 0x1602, 0x1603}},
		{"AKD", 0x1C13, []uint16{0x1A00, 0x1A01, 0x1A02, 0x1A03}},
		{"EK1914", 0x1C13, []uint16{0x1A00, 0x1A01}},
		{"EK1914", 0x1C12, []uint16{0x1600, 0x1601}},
	} {
		d, err := NewDevice(c.model)
		if err != nil {
			t.Fatal(err)
		}
		o := d.mbx.od.find(c.index)
		if o == nil {
			t.Fatalf("%s: no %#04x", c.model, c.index)
		}
		if n := int(o.entries[0].value[0]); n != len(c.want) {
			t.Errorf("%s %#04x:00 = %d, want %d", c.model, c.index, n, len(c.want))
			continue
		}
		for k, want := range c.want {
			if got := binary.LittleEndian.Uint16(o.entries[k+1].value); got != want {
				t.Errorf("%s %#04x:%02d = %#04x, want %#04x", c.model, c.index, k+1, got, want)
			}
			if d.mbx.od.find(want) == nil {
				t.Errorf("%s assigns %#04x, which has no mapping object", c.model, want)
			}
		}
	}
}

// TestShippedAssignmentKeepsProcessData: the assigned empty PDOs add no
// process data.
func TestShippedAssignmentKeepsProcessData(t *testing.T) {
	for _, model := range []string{"AKD", "EK1914"} {
		d, err := NewDevice(model)
		if err != nil {
			t.Fatal(err)
		}
		in, out := d.sii.InputBits(), d.sii.OutputBits()
		if d.pd.inBits != in || d.pd.outBits != out {
			t.Errorf("%s: process data %d in / %d out bits, the SII says %d / %d", model, d.pd.inBits, d.pd.outBits, in, out)
		}
	}
}

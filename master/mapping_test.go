package master

import (
	"strings"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// model builds a scanned slave with the given process-data SyncManagers
// (type, physical start, bits) and SII FMMU usages.
func model(name string, fmmus []sii.FMMUUsage, sms ...ProcessDataSM) *Slave {
	s := &Slave{OrderCode: name, ESC: esc.Info{FMMUs: 3, SyncManagers: 4}, SII: &sii.Device{FMMUs: fmmus}}
	for i, sm := range sms {
		if sm.Index == 0 {
			sm.Index = i
		}
		s.SyncManagers = append(s.SyncManagers, sm)
		if sm.Type == sii.SMProcessDataOut {
			s.OutputBits += sm.Bits
		} else {
			s.InputBits += sm.Bits
		}
	}
	return s
}

var (
	fmmuOut   = []sii.FMMUUsage{sii.FMMUOutputs}
	fmmuIn    = []sii.FMMUUsage{sii.FMMUInputs}
	fmmuOutIn = []sii.FMMUUsage{sii.FMMUOutputs, sii.FMMUInputs, sii.FMMUSyncManagerStatus}
)

func ek1100() *Slave { return model("EK1100", nil) }
func el2004() *Slave {
	return model("EL2004", fmmuOut, ProcessDataSM{Type: sii.SMProcessDataOut, Start: 0x0F00, Control: 0x44, Bits: 4})
}
func el1014() *Slave {
	return model("EL1014", fmmuIn, ProcessDataSM{Type: sii.SMProcessDataIn, Start: 0x1000, Control: 0x00, Bits: 4})
}
func el4132() *Slave {
	return model("EL4132", fmmuOutIn,
		ProcessDataSM{Index: 2, Type: sii.SMProcessDataOut, Start: 0x1100, Control: 0x24, Bits: 32},
		ProcessDataSM{Index: 3, Type: sii.SMProcessDataIn, Start: 0x1180, Control: 0x20, Bits: 0})
}
func el2889() *Slave {
	return model("EL2889", fmmuOut,
		ProcessDataSM{Index: 0, Type: sii.SMProcessDataOut, Start: 0x0F00, Control: 0x44, Bits: 8},
		ProcessDataSM{Index: 1, Type: sii.SMProcessDataOut, Start: 0x0F01, Control: 0x44, Bits: 8})
}

func referenceSet() []*Slave {
	return []*Slave{ek1100(), el2004(), el2004(), el1014(), el1014(), el4132(), model("EK1110", nil)}
}

func TestMapReferenceSet(t *testing.T) {
	slaves := referenceSet()
	l, err := mapProcessData(slaves, maxLRWData)
	if err != nil {
		t.Fatal(err)
	}
	// Outputs: EL2004 bits 0–3 and 4–7 of byte 0, EL4132 bytes 1–4; inputs
	// from a fresh byte: EL1014 bits 0–3 and 4–7.
	if l.outBytes != 5 || l.inBytes != 1 {
		t.Errorf("areas %d+%d bytes, want 5+1", l.outBytes, l.inBytes)
	}
	want := []struct {
		out, in BitRange
		fmmus   []fmmuSetting
	}{
		{},
		{out: BitRange{0, 4}, fmmus: []fmmuSetting{{0, esc.FMMU{LogicalStart: 0, Length: 1, LogicalStartBit: 0, LogicalEndBit: 3, PhysicalStart: 0x0F00, Type: esc.FMMUWrite, Active: true}}}},
		{out: BitRange{4, 4}, fmmus: []fmmuSetting{{0, esc.FMMU{LogicalStart: 0, Length: 1, LogicalStartBit: 4, LogicalEndBit: 7, PhysicalStart: 0x0F00, Type: esc.FMMUWrite, Active: true}}}},
		{in: BitRange{0, 4}, fmmus: []fmmuSetting{{0, esc.FMMU{LogicalStart: 5, Length: 1, LogicalStartBit: 0, LogicalEndBit: 3, PhysicalStart: 0x1000, Type: esc.FMMURead, Active: true}}}},
		{in: BitRange{4, 4}, fmmus: []fmmuSetting{{0, esc.FMMU{LogicalStart: 5, Length: 1, LogicalStartBit: 4, LogicalEndBit: 7, PhysicalStart: 0x1000, Type: esc.FMMURead, Active: true}}}},
		{out: BitRange{8, 32}, fmmus: []fmmuSetting{{0, esc.FMMU{LogicalStart: 1, Length: 4, LogicalStartBit: 0, LogicalEndBit: 7, PhysicalStart: 0x1100, Type: esc.FMMUWrite, Active: true}}}},
		{},
	}
	for i, s := range slaves {
		w := want[i]
		if s.Outputs != w.out || s.Inputs != w.in {
			t.Errorf("%s: outputs %+v inputs %+v, want %+v %+v", s.OrderCode, s.Outputs, s.Inputs, w.out, w.in)
		}
		if len(s.fmmus) != len(w.fmmus) {
			t.Errorf("%s: %d FMMUs, want %d", s.OrderCode, len(s.fmmus), len(w.fmmus))
			continue
		}
		for j := range w.fmmus {
			if s.fmmus[j] != w.fmmus[j] {
				t.Errorf("%s: FMMU %+v, want %+v", s.OrderCode, s.fmmus[j], w.fmmus[j])
			}
		}
	}
	// One datagram: 3 slaves with outputs (+2 each), 2 with inputs (+1 each).
	if len(l.chunks) != 1 || l.chunks[0] != (chunk{from: 0, to: 6, wantWKC: 8}) {
		t.Errorf("chunks %+v, want one of 6 bytes with WKC 8", l.chunks)
	}
}

func TestMapLayoutRules(t *testing.T) {
	byteOnly := el2004()
	byteOnly.ESC.Features |= esc.FeatureFMMUBitOperation
	cases := []struct {
		name    string
		slaves  []*Slave
		outputs []BitRange
		inputs  []BitRange
		bytes   [2]int
	}{
		{"three nibbles straddle a byte", []*Slave{el2004(), el2004(), el2004()},
			[]BitRange{{0, 4}, {4, 4}, {8, 4}}, []BitRange{{}, {}, {}}, [2]int{2, 0}},
		{"whole bytes align", []*Slave{el2004(), el4132(), el2004()},
			[]BitRange{{0, 4}, {8, 32}, {40, 4}}, []BitRange{{}, {}, {}}, [2]int{6, 0}},
		{"byte-only ESC aligns and rounds", []*Slave{el2004(), byteOnly, el2004()},
			[]BitRange{{0, 4}, {8, 8}, {16, 4}}, []BitRange{{}, {}, {}}, [2]int{3, 0}},
		{"adjacent SyncManagers share an FMMU", []*Slave{el2889(), el1014()},
			[]BitRange{{0, 16}, {}}, []BitRange{{}, {0, 4}}, [2]int{2, 1}},
		{"inputs only", []*Slave{el1014()}, []BitRange{{}}, []BitRange{{0, 4}}, [2]int{0, 1}},
		{"nothing to map", []*Slave{ek1100()}, []BitRange{{}}, []BitRange{{}}, [2]int{0, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := mapProcessData(c.slaves, maxLRWData)
			if err != nil {
				t.Fatal(err)
			}
			if [2]int{l.outBytes, l.inBytes} != c.bytes {
				t.Errorf("areas %d+%d bytes, want %v", l.outBytes, l.inBytes, c.bytes)
			}
			for i, s := range c.slaves {
				if s.Outputs != c.outputs[i] || s.Inputs != c.inputs[i] {
					t.Errorf("slave %d: outputs %+v inputs %+v, want %+v %+v", i, s.Outputs, s.Inputs, c.outputs[i], c.inputs[i])
				}
			}
		})
	}
	// The EL2889's two SyncManagers at 0x0F00 and 0x0F01 need one FMMU.
	s := el2889()
	if _, err := mapProcessData([]*Slave{s}, maxLRWData); err != nil {
		t.Fatal(err)
	}
	if len(s.fmmus) != 1 || s.fmmus[0].fmmu.Bits() != 16 || s.fmmus[0].fmmu.PhysicalStart != 0x0F00 {
		t.Errorf("EL2889 FMMUs %+v, want one of 16 bits from 0x0F00", s.fmmus)
	}
}

func TestMapSplitsDatagrams(t *testing.T) {
	cases := []struct {
		name    string
		slaves  []*Slave
		maxData int
		want    []chunk
		err     string
	}{
		{"reference set in 2-byte datagrams", referenceSet(), 2, nil, "cannot be cut"},
		{"reference set in 4-byte datagrams", referenceSet(), 4,
			[]chunk{{0, 1, 4}, {1, 5, 2}, {5, 6, 2}}, ""},
		{"reference set in 5-byte datagrams", referenceSet(), 5,
			[]chunk{{0, 5, 6}, {5, 6, 2}}, ""},
		{"outputs and inputs of one slave in one datagram", []*Slave{el2004(), el1014(), el4132()}, 6,
			[]chunk{{0, 6, 5}}, ""},
		{"one slave per datagram", []*Slave{el4132(), el4132()}, 4,
			[]chunk{{0, 4, 2}, {4, 8, 2}}, ""},
		{"slave too big", []*Slave{el4132()}, 3, nil, "EL4132"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := mapProcessData(c.slaves, c.maxData)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(l.chunks) != len(c.want) {
				t.Fatalf("chunks %+v, want %+v", l.chunks, c.want)
			}
			for i := range c.want {
				if l.chunks[i] != c.want[i] {
					t.Errorf("chunk %d = %+v, want %+v", i, l.chunks[i], c.want[i])
				}
			}
		})
	}
}

func TestMapRunsOutOfFMMUs(t *testing.T) {
	s := model("odd", nil,
		ProcessDataSM{Index: 0, Type: sii.SMProcessDataOut, Start: 0x1000, Bits: 4},
		ProcessDataSM{Index: 1, Type: sii.SMProcessDataOut, Start: 0x1100, Bits: 4},
		ProcessDataSM{Index: 2, Type: sii.SMProcessDataIn, Start: 0x1200, Bits: 4},
		ProcessDataSM{Index: 3, Type: sii.SMProcessDataIn, Start: 0x1300, Bits: 4})
	s.ESC.FMMUs = 3
	_, err := mapProcessData([]*Slave{s}, maxLRWData)
	if err == nil || !strings.Contains(err.Error(), "no free FMMU") {
		t.Fatalf("err %v, want no free FMMU", err)
	}
	s.ESC.FMMUs = 4
	if _, err := mapProcessData([]*Slave{s}, maxLRWData); err != nil {
		t.Fatal(err)
	}
	for i, f := range s.fmmus {
		if f.index != i {
			t.Errorf("run %d got FMMU %d", i, f.index)
		}
	}
}

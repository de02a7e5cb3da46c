package master

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master/coe"
	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/sii"
	"github.com/ecagent/ecagent/master/sim"
)

const pdoRealSII = "../testdata/real-hw/sii"

// pdoBench is a master on an in-process pipe to a simulated segment.
type pdoBench struct {
	m    *Master
	devs []*sim.Device
	logs *pdoLog
}

// pdoLog collects the master's log lines.
type pdoLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *pdoLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *pdoLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// abortLink turns the slaves' answers to SDO uploads of the given
// objects' sub-index 0 into aborts (object does not exist), as a device
// without them answers.
type abortLink struct {
	link.Link
	objects []uint16
}

func (l *abortLink) Recv(buf []byte, deadline time.Time) (int, error) {
	n, err := l.Link.Recv(buf, deadline)
	if err != nil {
		return n, err
	}
	f := buf[:n]
	for _, index := range l.objects {
		// CoE header of an SDO response, an upload response command,
		// the index and sub-index 0.
		for i := 0; i+10 <= len(f); i++ {
			if f[i] == 0x00 && f[i+1] == 0x30 && f[i+2]&0xE0 == 0x40 &&
				binary.LittleEndian.Uint16(f[i+3:]) == index && f[i+5] == 0 {
				f[i+2] = 0x80
				binary.LittleEndian.PutUint32(f[i+6:], uint32(coe.AbortNoObject))
			}
		}
	}
	return n, nil
}

func newPDOBench(t *testing.T, devices []string, cfg Config, abortObjects ...uint16) *pdoBench {
	t.Helper()
	devs, err := sim.ParseDevices(devices)
	if err != nil {
		t.Fatal(err)
	}
	seg := sim.NewSegment(devs)
	masterEnd, simEnd := link.NewPipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = seg.Serve(ctx, simEnd); close(done) }()
	b := &pdoBench{devs: devs, logs: &pdoLog{}}
	cfg.Logger = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Timeout, cfg.CycleTimeout, cfg.SIITimeout = time.Second, 2*time.Second, time.Second
	var l link.Link = masterEnd
	if len(abortObjects) > 0 {
		l = &abortLink{Link: masterEnd, objects: abortObjects}
	}
	m, err := New(l, &cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	b.m = m
	t.Cleanup(func() {
		_ = m.Close()
		cancel()
		_ = simEnd.Close()
		<-done
		if t.Failed() {
			t.Logf("master log:\n%s", b.logs.String())
		}
	})
	return b
}

// bringUp takes the segment to OP the way BringUp does, with the PDO
// step after PREOP, and checks the working counter of a cycle in OP.
func (b *pdoBench) bringUp(ctx context.Context) error {
	if _, err := b.m.Scan(ctx); err != nil {
		return err
	}
	if err := b.m.RequestState(ctx, esc.StatePreOp); err != nil {
		return err
	}
	if err := b.m.readPDOConfiguration(ctx); err != nil {
		return err
	}
	if _, err := b.m.MapProcessImage(); err != nil {
		return err
	}
	if err := b.m.RequestState(ctx, esc.StateSafeOp); err != nil {
		return err
	}
	for range 3 {
		b.m.Exchange()
	}
	if err := b.m.RequestState(ctx, esc.StateOp); err != nil {
		return err
	}
	if r := b.m.Exchange(); r.Err != nil {
		return fmt.Errorf("first cycle in OP: %w (wkc %d, want %d)", r.Err, r.WKC, r.ExpectedWKC)
	}
	return nil
}

// cycle exchanges one frame and fails the test on a bad cycle.
func (b *pdoBench) cycle(t *testing.T) {
	t.Helper()
	if r := b.m.Exchange(); r.Err != nil {
		t.Fatalf("cycle: %v (wkc %d, want %d)", r.Err, r.WKC, r.ExpectedWKC)
	}
}

// twoInputSMImage writes the SII image of a 12-channel digital input
// terminal with two input SyncManagers (channels 1–4 on SyncManager 0 at
// 0x1000, channels 5–12 on SyncManager 1 at 0x1080) and returns its path.
func twoInputSMImage(t *testing.T) string {
	t.Helper()
	d := &sii.Device{
		Header: sii.Header{PDIControl: 0x0104, Version: 1,
			Identity: sii.Identity{VendorID: 2, ProductCode: 0x26B83052, RevisionNumber: 0x00100000}},
		Strings: []string{"EL9912", "12K. Dig. Eingang", "Input"},
		General: &sii.General{OrderIndex: 1, NameIndex: 2, PhysicalPorts: 0x0033},
		FMMUs:   []sii.FMMUUsage{sii.FMMUInputs, sii.FMMUInputs},
		SyncManagers: []sii.SyncManager{
			{StartAddress: 0x1000, Enable: 0x01, Type: sii.SMProcessDataIn},
			{StartAddress: 0x1080, Enable: 0x01, Type: sii.SMProcessDataIn},
		},
	}
	for c := range 12 {
		sm := uint8(0)
		if c >= 4 {
			sm = 1
		}
		d.TxPDOs = append(d.TxPDOs, sii.PDO{Index: 0x1A00 + uint16(c), SyncManager: sm, NameIndex: 3,
			Flags:   sii.PDOMandatory | sii.PDOFixedContent,
			Entries: []sii.PDOEntry{{Index: 0x6000 + 0x10*uint16(c), SubIndex: 1, NameIndex: 3, DataType: 1, BitLength: 1}}})
	}
	img, err := sii.Encode(d)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "el9912.bin")
	if err := os.WriteFile(path, img, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// withOffsets returns pdos with their entries' offsets counted from 0,
// one after the other: the layout of a slave whose SyncManagers of one
// direction form one run.
func withOffsets(pdos []PDO) []PDO {
	if len(pdos) == 0 {
		return nil
	}
	out := make([]PDO, len(pdos))
	at := 0
	for i, p := range pdos {
		out[i] = PDO{Index: p.Index, SM: p.SM, Entries: append([]PDOEntry(nil), p.Entries...)}
		for j := range out[i].Entries {
			out[i].Entries[j].Offset = at
			at += out[i].Entries[j].Bits
		}
	}
	return out
}

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

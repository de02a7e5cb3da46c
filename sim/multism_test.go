package sim

import (
	"bytes"
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
	"github.com/ecagent/ecagent/ethercat/wire"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// segOf builds a segment of devices made from SII images and gives them
// station addresses 0x1001, 0x1002, ….
func segOf(tb testing.TB, images ...[]byte) *Segment {
	tb.Helper()
	var devs []*Device
	for i, img := range images {
		d, err := DeviceFromSII(img, fmtf("device%d", i+1))
		if err != nil {
			tb.Fatal(err)
		}
		devs = append(devs, d)
	}
	seg := NewSegment(devs)
	address(tb, seg)
	return seg
}

// withApplicationController returns a copy of img whose ESC configuration
// (SII word 0) leaves out device emulation, with the header checksum
// fixed: the same device, but behind an application controller that
// checks the SyncManagers before SAFEOP.
func withApplicationController(img []byte) []byte {
	out := append([]byte(nil), img...)
	out[1] &^= 0x01
	out[14] = sii.CRC8(out[:14])
	return out
}

// twoInputSMs is a 12-channel digital input terminal with two input
// SyncManagers: channels 1–4 on SyncManager 0 (4 bits at 0x1000),
// channels 5–12 on SyncManager 1 (8 bits at 0x1080).
func twoInputSMs(tb testing.TB) []byte {
	tb.Helper()
	desc := digitalIn("EL9912", 12, 0x26B83052, "3ms")
	desc.SyncManagers = []sii.SyncManager{
		{StartAddress: 0x1000, Enable: 0x01, Type: sii.SMProcessDataIn},
		{StartAddress: 0x1080, Enable: 0x01, Type: sii.SMProcessDataIn},
	}
	desc.FMMUs = []sii.FMMUUsage{sii.FMMUInputs, sii.FMMUInputs}
	for c := 4; c < 12; c++ {
		desc.TxPDOs[c].SyncManager = 1
	}
	img, err := sii.Encode(desc)
	if err != nil {
		tb.Fatal(err)
	}
	return img
}

// el2889Outputs configures the EL2889's two output SyncManagers (one
// byte each at 0x0F00 and 0x0F01) and maps logical bytes 0–1 onto them
// with fmmus.
func el2889Outputs(tb testing.TB, seg *Segment, adp uint16, fmmus []esc.FMMU) {
	tb.Helper()
	configSM(tb, seg, adp, 0, 0x0F00, 1, 0x44)
	configSM(tb, seg, adp, 1, 0x0F01, 1, 0x44)
	for i, f := range fmmus {
		configFMMU(tb, seg, adp, i, f)
	}
}

func TestProcessDataSizes(t *testing.T) {
	tests := []struct {
		name            string
		image           func(testing.TB) []byte
		outSize, inSize int
	}{
		{"EK1100", func(tb testing.TB) []byte { return testsupport.RealImage(tb, "ek1100.bin") }, 0, 0},
		{"EL2004 (4 bits)", func(tb testing.TB) []byte { return testsupport.RealImage(tb, "el2004.bin") }, 1, 0},
		{"EL2889 (two output SyncManagers of 8 bits)", func(tb testing.TB) []byte { return testsupport.RealImage(tb, "el2889.bin") }, 2, 0},
		{"EL2262 (two output SyncManagers of 53 bits, packed)", func(tb testing.TB) []byte { return testsupport.RealImage(tb, "el2262.bin") }, 14, 4},
		{"two input SyncManagers of 4 and 8 bits", twoInputSMs, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := segOf(t, tt.image(t)).Devices()[0]
			if got := d.OutputSize(); got != tt.outSize {
				t.Errorf("OutputSize() = %d, want %d", got, tt.outSize)
			}
			if got := d.InputSize(); got != tt.inSize {
				t.Errorf("InputSize() = %d, want %d", got, tt.inSize)
			}
			if got := len(d.Outputs()); got != tt.outSize {
				t.Errorf("len(Outputs()) = %d, want %d", got, tt.outSize)
			}
			if got := len(d.Inputs()); got != tt.inSize {
				t.Errorf("len(Inputs()) = %d, want %d", got, tt.inSize)
			}
		})
	}
}

// TestMultiSMOutputBits writes each of the real EL2889's 16 outputs alone
// and checks that bits 0–7 land in SyncManager 0's byte, bits 8–15 in
// SyncManager 1's, and that Outputs shows bit b as bit b.
func TestMultiSMOutputBits(t *testing.T) {
	tests := []struct {
		name  string
		fmmus []esc.FMMU
	}{
		{"one FMMU over both SyncManagers", []esc.FMMU{esc.ForBits(0, 16, 0x0F00, 0, esc.FMMUWrite)}},
		{"one FMMU per SyncManager", []esc.FMMU{
			esc.ForBits(0, 8, 0x0F00, 0, esc.FMMUWrite), esc.ForBits(8, 8, 0x0F01, 0, esc.FMMUWrite)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := segOf(t, testsupport.RealImage(t, "el2889.bin"))
			el2889Outputs(t, seg, 0x1001, tt.fmmus)
			d := seg.Devices()[0]
			for b := range 16 {
				want := []byte{0, 0}
				want[b/8] = 1 << (b % 8)
				if got := one(t, seg, logical(wire.LWR, 0, want)); got.WKC != 1 {
					t.Fatalf("bit %d: LWR WKC %d, want 1", b, got.WKC)
				}
				if got := d.Outputs(); !bytes.Equal(got, want) {
					t.Errorf("bit %d: Outputs() = % x, want % x", b, got, want)
				}
				if got := d.Register(0x0F00, 2); !bytes.Equal(got, want) {
					t.Errorf("bit %d: SyncManager 0 and 1 buffers hold % x, want % x", b, got, want)
				}
			}
		})
	}
}

// TestMultiSMThreeBuffer checks that each output SyncManager takes a
// buffer on its own: a datagram that writes one SyncManager's whole area
// updates that SyncManager only, and one that writes part of an area
// updates nothing.
func TestMultiSMThreeBuffer(t *testing.T) {
	type step struct {
		name string
		dg   dg
		want []byte // Outputs() afterwards
	}
	tests := []struct {
		name  string
		image string
		setup func(tb testing.TB, seg *Segment)
		steps []step
	}{
		{"EL2889", "el2889.bin", func(tb testing.TB, seg *Segment) {
			el2889Outputs(tb, seg, 0x1001, []esc.FMMU{esc.ForBits(0, 16, 0x0F00, 0, esc.FMMUWrite)})
		}, []step{
			{"LWR of both", logical(wire.LWR, 0, []byte{0x5A, 0xC3}), []byte{0x5A, 0xC3}},
			{"LWR of logical byte 1: SyncManager 1 only", logical(wire.LWR, 1, []byte{0x0F}), []byte{0x5A, 0x0F}},
			{"LWR of logical byte 0: SyncManager 0 only", logical(wire.LWR, 0, []byte{0x11}), []byte{0x11, 0x0F}},
			{"FPWR of SyncManager 1's byte", phys(wire.FPWR, 0x1001, 0x0F01, []byte{0x7E}), []byte{0x11, 0x7E}},
			{"FPWR of SyncManager 0's byte", phys(wire.FPWR, 0x1001, 0x0F00, []byte{0x81}), []byte{0x81, 0x7E}},
		}},
		{"EL2262", "el2262.bin", func(tb testing.TB, seg *Segment) {
			configSM(tb, seg, 0x1001, 0, 0x1000, 7, 0x64)
			configSM(tb, seg, 0x1001, 1, 0x1200, 7, 0x64)
		}, []step{
			{"SyncManager 0 whole", phys(wire.FPWR, 0x1001, 0x1000, []byte{1, 2, 3, 4, 5, 6, 0x07}),
				[]byte{1, 2, 3, 4, 5, 6, 0x07, 0, 0, 0, 0, 0, 0, 0}},
			{"SyncManager 0 without its last byte", phys(wire.FPWR, 0x1001, 0x1000, []byte{9, 9, 9, 9, 9, 9}),
				[]byte{1, 2, 3, 4, 5, 6, 0x07, 0, 0, 0, 0, 0, 0, 0}},
			{"SyncManager 0 without its first byte", phys(wire.FPWR, 0x1001, 0x1001, []byte{9, 9, 9, 9, 9, 9}),
				[]byte{1, 2, 3, 4, 5, 6, 0x07, 0, 0, 0, 0, 0, 0, 0}},
			// SyncManager 1's bits follow SyncManager 0's 53 bits: its
			// first byte 0xFF is device bits 53–60.
			{"SyncManager 1 whole", phys(wire.FPWR, 0x1001, 0x1200, []byte{0xFF, 0, 0, 0, 0, 0, 0x10}),
				[]byte{1, 2, 3, 4, 5, 6, 0xE7, 0x1F, 0, 0, 0, 0, 0, 0x02}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := segOf(t, testsupport.RealImage(t, tt.image))
			tt.setup(t, seg)
			d := seg.Devices()[0]
			for _, s := range tt.steps {
				if got := one(t, seg, s.dg); got.WKC != 1 {
					t.Fatalf("%s: WKC %d, want 1", s.name, got.WKC)
				}
				if got := d.Outputs(); !bytes.Equal(got, s.want) {
					t.Errorf("%s: Outputs() = % x, want % x", s.name, got, s.want)
				}
			}
		})
	}
}

// TestMultiSMBitPacking maps the real EL2262's two output SyncManagers of
// 53 bits the way ecagent's master does (SyncManager 1 from logical bit 53
// on) and checks that Outputs bit i is logical bit i.
func TestMultiSMBitPacking(t *testing.T) {
	seg := segOf(t, testsupport.RealImage(t, "el2262.bin"))
	configSM(t, seg, 0x1001, 0, 0x1000, 7, 0x64)
	configSM(t, seg, 0x1001, 1, 0x1200, 7, 0x64)
	configFMMU(t, seg, 0x1001, 0, esc.ForBits(0, 53, 0x1000, 0, esc.FMMUWrite))
	configFMMU(t, seg, 0x1001, 1, esc.ForBits(53, 53, 0x1200, 0, esc.FMMUWrite))
	d := seg.Devices()[0]
	out := make([]byte, 14)
	for i := range out {
		out[i] = byte(0x3D*i + 0x17)
	}
	if got := one(t, seg, logical(wire.LWR, 0, out)); got.WKC != 1 {
		t.Fatalf("LWR WKC %d, want 1", got.WKC)
	}
	want := append([]byte(nil), out...)
	want[13] &= 0x03 // 106 bits
	if got := d.Outputs(); !bytes.Equal(got, want) {
		t.Errorf("Outputs() = % x, want % x", got, want)
	}
	// Logical bit 53 (byte 6, bit 5) is bit 0 of SyncManager 1's buffer.
	if got, wantBit := d.Register(0x1200, 1)[0]&1, out[6]>>5&1; got != wantBit {
		t.Errorf("SyncManager 1 bit 0 = %d, want logical bit 53 = %d", got, wantBit)
	}
}

// TestMultiSMSafeOpChecks brings an EL2889 behind an application
// controller to SAFEOP with each of its two output SyncManagers right or
// wrong.
func TestMultiSMSafeOpChecks(t *testing.T) {
	type sm struct {
		start, length uint16
		control       uint8
	}
	good := sm{0x0F00, 1, 0x44}
	tests := []struct {
		name       string
		sm0, sm1   *sm
		wantStatus uint16
		wantCode   esc.ALStatusCode
	}{
		{"both right", &good, &sm{0x0F01, 1, 0x44}, 0x04, esc.ALNoError},
		{"second not configured", &good, nil, 0x12, esc.ALInvalidSyncManagerConfig},
		{"first not configured", nil, &sm{0x0F01, 1, 0x44}, 0x12, esc.ALInvalidSyncManagerConfig},
		{"second at the first's address", &good, &sm{0x0F00, 1, 0x44}, 0x12, esc.ALInvalidSyncManagerConfig},
		{"second at a wrong address", &good, &sm{0x0F02, 1, 0x44}, 0x12, esc.ALInvalidSyncManagerConfig},
		{"second reads", &good, &sm{0x0F01, 1, 0x40}, 0x12, esc.ALInvalidSyncManagerConfig},
		{"second in mailbox mode", &good, &sm{0x0F01, 1, 0x46}, 0x12, esc.ALInvalidSyncManagerConfig},
		{"second too long", &good, &sm{0x0F01, 2, 0x44}, 0x12, esc.ALInvalidOutputConfig},
		{"first too long", &sm{0x0F00, 2, 0x44}, &sm{0x0F01, 1, 0x44}, 0x12, esc.ALInvalidOutputConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seg := segOf(t, withApplicationController(testsupport.RealImage(t, "el2889.bin")))
			if st, code := request(t, seg, 0x1001, 0x02); st != 0x02 {
				t.Fatalf("PREOP: %#04x %v", st, code)
			}
			for i, s := range []*sm{tt.sm0, tt.sm1} {
				if s != nil {
					configSM(t, seg, 0x1001, i, s.start, s.length, s.control)
				}
			}
			st, code := request(t, seg, 0x1001, 0x04)
			if st != tt.wantStatus || code != tt.wantCode {
				t.Fatalf("SAFEOP: status %#04x code %v, want %#04x %v", st, code, tt.wantStatus, tt.wantCode)
			}
			if st != 0x04 {
				return
			}
			configFMMU(t, seg, 0x1001, 0, esc.ForBits(0, 16, 0x0F00, 0, esc.FMMUWrite))
			if got := one(t, seg, logical(wire.LWR, 0, []byte{0x34, 0x12})); got.WKC != 1 {
				t.Errorf("LWR in SAFEOP: WKC %d, want 1", got.WKC)
			}
			if got := seg.Devices()[0].Outputs(); !bytes.Equal(got, []byte{0x34, 0x12}) {
				t.Errorf("Outputs() in SAFEOP = % x, want 34 12", got)
			}
		})
	}
}

// TestMultiSMInputs checks SetInputs, Inputs and the input patterns of a
// device with two input SyncManagers of 4 and 8 bits: device bits 0–3 are
// SyncManager 0's, bits 4–11 SyncManager 1's.
func TestMultiSMInputs(t *testing.T) {
	setup := func(tb testing.TB, opts ...Option) (*Segment, *Device) {
		tb.Helper()
		d, err := DeviceFromSII(twoInputSMs(tb), "two input SyncManagers")
		if err != nil {
			tb.Fatal(err)
		}
		seg := NewSegment([]*Device{d}, opts...)
		address(tb, seg)
		configSM(tb, seg, 0x1001, 0, 0x1000, 1, 0x00)
		configSM(tb, seg, 0x1001, 1, 0x1080, 1, 0x00)
		// As the master maps them: 4 bits, then 8 right after.
		configFMMU(tb, seg, 0x1001, 0, esc.ForBits(0, 4, 0x1000, 0, esc.FMMURead))
		configFMMU(tb, seg, 0x1001, 1, esc.ForBits(4, 8, 0x1080, 0, esc.FMMURead))
		return seg, d
	}
	t.Run("SetInputs", func(t *testing.T) {
		seg, d := setup(t)
		d.SetInputs([]byte{0xAB, 0xFC}) // bits 12–15 are not inputs
		if got, want := d.Inputs(), []byte{0xAB, 0x0C}; !bytes.Equal(got, want) {
			t.Errorf("Inputs() = % x, want % x", got, want)
		}
		if got := d.Register(0x1000, 1)[0] & 0x0F; got != 0x0B {
			t.Errorf("SyncManager 0 holds %#x, want 0xb (bits 0–3)", got)
		}
		if got := d.Register(0x1080, 1)[0]; got != 0xCA {
			t.Errorf("SyncManager 1 holds %#02x, want 0xca (bits 4–11)", got)
		}
		if got := one(t, seg, logical(wire.LRD, 0, []byte{0, 0})); got.WKC != 1 || !bytes.Equal(got.Data, []byte{0xAB, 0x0C}) {
			t.Errorf("LRD: WKC %d data % x, want 1, ab 0c", got.WKC, got.Data)
		}
	})
	patterns := []struct {
		pattern Pattern
		want    func(cycle int) uint16 // Inputs() after the cycle (0 = the first)
	}{
		{Pattern{Kind: PatternWalkingBit}, func(c int) uint16 { return 1 << (c % 12) }},
		{Pattern{Kind: PatternCounter}, func(c int) uint16 { return uint16(c) & 0x0FFF }},
		{Pattern{Kind: PatternSquare, Period: 6}, func(c int) uint16 {
			if c/3%2 == 0 {
				return 0x0FFF
			}
			return 0
		}},
	}
	for _, p := range patterns {
		t.Run(p.pattern.String(), func(t *testing.T) {
			seg, d := setup(t, WithInputPattern(p.pattern))
			for c := range 14 {
				got := one(t, seg, logical(wire.LRD, 0, []byte{0, 0}))
				want := p.want(c)
				if in := d.Inputs(); uint16(in[0])|uint16(in[1])<<8 != want {
					t.Errorf("cycle %d: Inputs() = % x, want %#04x", c, in, want)
				}
				if v := uint16(got.Data[0]) | uint16(got.Data[1])<<8; v != want {
					t.Errorf("cycle %d: LRD read %#04x, want %#04x", c, v, want)
				}
			}
		})
	}
}

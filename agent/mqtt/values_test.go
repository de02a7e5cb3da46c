package mqtt

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// bitsSlow is the obvious bit-by-bit reading bitsAt must agree with.
func bitsSlow(img []byte, bit, n int) uint64 {
	var v uint64
	for k := range n {
		b := bit + k
		if b/8 < len(img) && img[b/8]>>(b%8)&1 != 0 {
			v |= 1 << uint(k)
		}
	}
	return v
}

func TestBitsAt(t *testing.T) {
	img := []byte{0b1010_1100, 0xFF, 0x01, 0x80, 0x12, 0x34, 0x56, 0x78, 0x9A, 0xBC}
	tests := []struct {
		bit, n int
		want   uint64
	}{
		{0, 1, 0},
		{2, 1, 1},
		{2, 4, 0b1011},
		{4, 8, 0xFA},     // across a byte boundary
		{8, 16, 0x01FF},  // aligned, little endian
		{15, 3, 0b011},   // bit 15 = 1, then bits 0 and 1 of byte 2 = 1, 0
		{76, 8, 0x0B},    // runs past the end: zeros
		{200, 8, 0},      // entirely past the end
		{0, 0, 0},        // no bits
		{16, 16, 0x8001}, // a negative INT16
	}
	for _, tt := range tests {
		if got := bitsAt(img, tt.bit, tt.n); got != tt.want {
			t.Errorf("bitsAt(%d, %d) = %#x, want %#x", tt.bit, tt.n, got, tt.want)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		bit, n := r.IntN(100), 1+r.IntN(64)
		if got, want := bitsAt(img, bit, n), bitsSlow(img, bit, n); got != want {
			t.Fatalf("bitsAt(%d, %d) = %#x, want %#x", bit, n, got, want)
		}
	}
}

func TestSignalValues(t *testing.T) {
	tests := []struct {
		name string
		sig  Signal
		raw  uint64
		json string
		f    float64
	}{
		{"bool on", Signal{Type: TypeBool, Bits: 1}, 1, "true", 1},
		{"bool off", Signal{Type: TypeBool, Bits: 1}, 0, "false", 0},
		{"int16 negative", Signal{Type: TypeInt, Signed: true, Bits: 16}, 0x8000, "-32768", -32768},
		{"int16 positive", Signal{Type: TypeInt, Signed: true, Bits: 16}, 0x7FFF, "32767", 32767},
		{"uint2", Signal{Type: TypeUint, Bits: 2}, 3, "3", 3},
		{"uint64 max", Signal{Type: TypeUint, Bits: 64}, math.MaxUint64, "18446744073709551615", math.MaxUint64},
		{"int64 -1", Signal{Type: TypeInt, Signed: true, Bits: 64}, math.MaxUint64, "-1", -1},
		{"PT100 in 0.1 °C", Signal{Type: TypeFloat, Signed: true, Bits: 16, Scale: 0.1}, uint64(uint16(0xFF38)), "-20", -20},
		{"±10 V", Signal{Type: TypeFloat, Signed: true, Bits: 16, Scale: 10.0 / 0x7FFF}, 0x7FFF, "10", 10},
		{"offset", Signal{Type: TypeFloat, Bits: 8, Scale: 2, Offset: -1}, 3, "5", 5},
		{"REAL32", Signal{Type: TypeFloat, Real: true, Bits: 32, Scale: 1}, uint64(math.Float32bits(1.5)), "1.5", 1.5},
		{"REAL64 NaN", Signal{Type: TypeFloat, Real: true, Bits: 64, Scale: 1}, math.Float64bits(math.NaN()), "null", math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(tt.sig.AppendJSON(nil, tt.raw)); got != tt.json {
				t.Errorf("JSON %s, want %s", got, tt.json)
			}
			got := tt.sig.Float(tt.raw)
			if !(got == tt.f || math.Abs(got-tt.f) < 1e-9 || (math.IsNaN(got) && math.IsNaN(tt.f))) {
				t.Errorf("Float %v, want %v", got, tt.f)
			}
		})
	}
}

func TestRawForInvertsFloat(t *testing.T) {
	sigs := []Signal{
		{Name: "b", Type: TypeBool, Bits: 1},
		{Name: "i16", Type: TypeInt, Signed: true, Bits: 16},
		{Name: "u2", Type: TypeUint, Bits: 2},
		{Name: "volts", Type: TypeFloat, Signed: true, Bits: 16, Scale: 10.0 / 0x7FFF},
		{Name: "kelvin", Type: TypeFloat, Signed: true, Bits: 16, Scale: 0.1, Offset: 273.15},
		{Name: "r32", Type: TypeFloat, Real: true, Bits: 32, Scale: 1},
		{Name: "i64", Type: TypeInt, Signed: true, Bits: 64},
		{Name: "u64", Type: TypeUint, Bits: 64},
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, s := range sigs {
		for range 2000 {
			raw := r.Uint64()
			if s.Bits < 64 {
				raw &= 1<<uint(s.Bits) - 1
			}
			if s.Real {
				raw = uint64(math.Float32bits(float32(r.NormFloat64() * 1e3)))
			}
			v := s.Float(raw)
			back, ok := s.rawFor(v)
			if s.Type == TypeUint && s.Bits == 64 && v >= math.Ldexp(1, 64) {
				if ok {
					t.Errorf("%s: %v does not fit 64 bits", s.Name, v)
				}
				continue
			}
			if !ok || (back != raw && s.Bits < 54) {
				t.Fatalf("%s: raw %#x → %v → %#x (ok %v)", s.Name, raw, v, back, ok)
			}
		}
	}
	tooBig := []struct {
		sig Signal
		v   float64
	}{
		{sigs[0], 2}, {sigs[0], 0.5}, {sigs[1], 32768}, {sigs[1], -32769}, {sigs[2], 4}, {sigs[2], -1},
		{sigs[3], 10.001}, {sigs[5], math.Inf(1)}, {sigs[5], 1e39}, {sigs[1], math.NaN()},
		{sigs[6], 9.3e18}, {sigs[7], 1.9e19}, {sigs[6], math.Ldexp(1, 63)}, {sigs[7], math.Ldexp(1, 64)},
	}
	for _, tt := range tooBig {
		if raw, ok := tt.sig.rawFor(tt.v); ok {
			t.Errorf("%s: rawFor(%v) = %#x, want refusal", tt.sig.Name, tt.v, raw)
		}
	}
}

func TestAppendJSONFloat(t *testing.T) {
	for _, f := range []float64{0, -0.5, 1e21, 1e-7, 123456789.125} {
		got := string(appendJSONFloat(nil, f))
		back, err := strconv.ParseFloat(got, 64)
		if err != nil || back != f {
			t.Errorf("appendJSONFloat(%v) = %s", f, got)
		}
	}
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := string(appendJSONFloat(nil, f)); got != "null" {
			t.Errorf("appendJSONFloat(%v) = %s, want null", f, got)
		}
	}
}

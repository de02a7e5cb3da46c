package mqtt

import (
	"errors"
	"math"
	"testing"
	"time"
)

func writableModel(t *testing.T) *Model {
	t.Helper()
	m, problems := NewModel(referenceBus(), mustRules(t, nil,
		[]string{"EL3204-7/rtd_inputs_channel_1.limit_1 name=limit"},
		[]string{"EL2004-1/*", "EL4132-5/ao_output_channel_1.analog_output -5..5", "EL4132-5/ao_output_channel_2.analog_output"}))
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	return m
}

func TestParseCommandValue(t *testing.T) {
	m := writableModel(t)
	out := m.Device("EL2004-1").Signal("channel_1.output")
	volts := m.Device("EL4132-5").Signal("ao_output_channel_1.analog_output")
	full := m.Device("EL4132-5").Signal("ao_output_channel_2.analog_output")
	i16 := &Signal{Name: "i16", Type: TypeInt, Signed: true, Bits: 16, Scale: 1}
	tests := []struct {
		name    string
		sig     *Signal
		payload string
		code    RejectCode // "" accepted
		value   float64
		raw     uint64
	}{
		{"bool true", out, "true", "", 1, 1},
		{"bool false in object", out, ` {"value": false} `, "", 0, 0},
		{"bool in object with another member", out, ` {"value": false, "id": "x"} `, RejectMalformed, 0, 0},
		{"bool in object with a time", out, ` {"value": true, "ts": 1718000000000} `, "", 1, 1},
		{"underflow", volts, "1e-400", RejectOutOfRange, 0, 0},
		{"subnormal", volts, "4e-310", RejectOutOfRange, 0, 0},
		{"zero with an exponent", volts, "0e-400", "", 0, 0},
		{"negative zero", volts, "-0.0", "", 0, 0},
		{"smallest normal", volts, "2.2250738585072014e-308", "", 2.2250738585072014e-308, 0},
		{"above the range by less than a double shows", volts, "5.00000000000000000001", RejectOutOfRange, 0, 0},
		{"the bound written long", volts, "5.00000000000000000000e0", "", 5, uint64(int16(math.Round(5 / (10.0 / 0x7FFF))))},
		{"integer by rounding only", i16, "3.0000000000000000001", RejectWrongType, 0, 0},
		{"integer with an exponent", i16, "3e2", "", 300, 300},
		{"integer written with a fraction of zero", i16, "-3.000", "", -3, uint64(uint16(0xFFFD))},
		{"bool as 1", out, "1", "", 1, 1},
		{"bool as 2", out, "2", RejectWrongType, 0, 0},
		{"bool as string", out, `"true"`, RejectWrongType, 0, 0},
		{"bool as null", out, `null`, RejectWrongType, 0, 0},
		{"bool as array", out, `[true]`, RejectWrongType, 0, 0},
		{"volts", volts, "2.5", "", 2.5, uint64(int16(math.Round(2.5 / (10.0 / 0x7FFF))))},
		{"volts negative", volts, "-5", "", -5, uint64(uint16(int16(math.Round(-5 / (10.0 / 0x7FFF)))))},
		{"volts above the allowed range", volts, "5.01", RejectOutOfRange, 0, 0},
		{"volts as bool", volts, "true", RejectWrongType, 0, 0},
		{"full scale", full, "10", "", 10, 0x7FFF},
		{"beyond full scale", full, "10.001", RejectOutOfRange, 0, 0},
		{"integer", i16, "-300", "", -300, uint64(uint16(0xFED4))},
		{"integer with a fraction", i16, "3.5", RejectWrongType, 0, 0},
		{"integer too large", i16, "40000", RejectOutOfRange, 0, 0},
		{"huge number", i16, "1e999", RejectOutOfRange, 0, 0},
		{"malformed", out, "tru", RejectMalformed, 0, 0},
		{"empty", out, "  ", RejectMalformed, 0, 0},
		{"two values", out, "true false", RejectMalformed, 0, 0},
		{"object without value", out, `{"v": true}`, RejectMalformed, 0, 0},
		{"unterminated object", out, `{"value": true`, RejectMalformed, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, raw, err := ParseCommandValue([]byte(tt.payload), tt.sig)
			if tt.code == "" {
				if err != nil || v != tt.value || raw != tt.raw {
					t.Fatalf("= %v, %#x, %v; want %v, %#x", v, raw, err, tt.value, tt.raw)
				}
				return
			}
			var re *RejectError
			if !errors.As(err, &re) || re.Code != tt.code || re.Reason == "" {
				t.Fatalf("err = %v, want a %s rejection with a reason", err, tt.code)
			}
		})
	}
}

// FuzzParseCommandValue: never panics; a refusal is a *RejectError with a
// reason; an accepted value is of the signal's type, within its range,
// and its raw bits give it back (to the raw step).
func FuzzParseCommandValue(f *testing.F) {
	for _, s := range []string{"true", "false", "1", "0", "2.5", "-5", "1e999", `{"value": 3}`, `"x"`, "null", "[1]", "{", ""} {
		f.Add([]byte(s), uint8(0))
		f.Add([]byte(s), uint8(1))
		f.Add([]byte(s), uint8(2))
	}
	m, _ := NewModel(referenceBus(), Rules{Interval: time.Second, Writes: nil})
	el4132 := m.Device("EL4132-5").Signal("ao_output_channel_1.analog_output")
	el4132.Writable, el4132.Min, el4132.Max = true, -5, 5
	sigs := []*Signal{
		m.Device("EL2004-1").Signal("channel_1.output"),
		el4132,
		{Name: "u2", Type: TypeUint, Bits: 2, Scale: 1},
	}
	f.Fuzz(func(t *testing.T, payload []byte, which uint8) {
		s := sigs[int(which)%len(sigs)]
		v, raw, err := ParseCommandValue(payload, s)
		if err != nil {
			var re *RejectError
			if !errors.As(err, &re) || re.Reason == "" || re.Code == "" {
				t.Fatalf("error %v is no rejection with a reason", err)
			}
			if v != 0 || raw != 0 {
				t.Fatalf("a rejection with a value: %v %#x", v, raw)
			}
			return
		}
		if s.Writable && (v < s.Min || v > s.Max) {
			t.Fatalf("accepted %v outside %v..%v", v, s.Min, s.Max)
		}
		if s.Bits < 64 && raw>>uint(s.Bits) != 0 {
			t.Fatalf("raw %#x wider than %d bits", raw, s.Bits)
		}
		if back := s.Float(raw); math.Abs(back-v) > math.Abs(s.Scale)/2+1e-9 {
			t.Fatalf("accepted %v, the raw bits %#x mean %v", v, raw, back)
		}
		if s.Type != TypeFloat && v != math.Trunc(v) {
			t.Fatalf("a non-integral %v for a %v", v, s.Type)
		}
	})
}

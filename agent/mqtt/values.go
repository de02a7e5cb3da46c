package mqtt

import (
	"encoding/binary"
	"math"
	"strconv"
)

// bitsAt returns n bits (1 to 64) of img from bit address bit on, least
// significant bit first, as the process image stores fields. Bits beyond
// img read as 0. It allocates nothing.
func bitsAt(img []byte, bit, n int) uint64 {
	if n <= 0 || bit < 0 {
		return 0
	}
	at, shift := bit>>3, uint(bit&7)
	var word [9]byte
	if at < len(img) {
		copy(word[:], img[at:])
	}
	v := binary.LittleEndian.Uint64(word[:8]) >> shift
	if shift > 0 {
		v |= uint64(word[8]) << (64 - shift)
	}
	if n < 64 {
		v &= 1<<uint(n) - 1
	}
	return v
}

// Raw returns the signal's raw bits from a snapshot of the process image.
func (s *Signal) Raw(img []byte) uint64 { return bitsAt(img, s.bit, s.Bits) }

// signedRaw sign-extends the signal's raw bits.
func (s *Signal) signedRaw(raw uint64) int64 {
	if s.Bits >= 64 {
		return int64(raw)
	}
	shift := uint(64 - s.Bits)
	return int64(raw<<shift) >> shift
}

// Float returns the signal's engineering value as a float64: 0 or 1 for a
// bool, the scaled raw value otherwise.
func (s *Signal) Float(raw uint64) float64 {
	var v float64
	switch {
	case s.Type == TypeBool:
		if raw != 0 {
			return 1
		}
		return 0
	case s.Real && s.Bits == 32:
		v = float64(math.Float32frombits(uint32(raw)))
	case s.Real:
		v = math.Float64frombits(raw)
	case s.Signed:
		v = float64(s.signedRaw(raw))
	default:
		v = float64(raw)
	}
	if s.Type == TypeFloat {
		v = v*s.Scale + s.Offset
	}
	return v
}

// AppendJSON appends the signal's value for raw as a JSON value: true or
// false, an integer, or a number (null when it is not finite).
func (s *Signal) AppendJSON(b []byte, raw uint64) []byte {
	switch s.Type {
	case TypeBool:
		return strconv.AppendBool(b, raw != 0)
	case TypeInt:
		return strconv.AppendInt(b, s.signedRaw(raw), 10)
	case TypeUint:
		return strconv.AppendUint(b, raw, 10)
	}
	return appendJSONFloat(b, s.Float(raw))
}

// appendJSONFloat appends f as a JSON number, or null for NaN and ±Inf,
// which JSON cannot carry.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// rawFor converts an engineering value to the raw bits to write: the
// inverse of Float, rounded to the nearest raw step. ok is false when v
// does not fit the raw bits.
func (s *Signal) rawFor(v float64) (raw uint64, ok bool) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	if s.Type == TypeBool {
		if v != 0 && v != 1 {
			return 0, false
		}
		return uint64(v), true
	}
	if s.Type == TypeFloat {
		v = (v - s.Offset) / s.Scale
	}
	if s.Real {
		if s.Bits == 32 {
			if math.Abs(v) > math.MaxFloat32 {
				return 0, false
			}
			return uint64(math.Float32bits(float32(v))), true
		}
		return math.Float64bits(v), true
	}
	r := math.Round(v)
	lo, hi := s.rawRange()
	// hi is 2^n − 1, which a float64 rounds up to 2^n from n = 54 on: the
	// comparison with the power of two itself is the exact one.
	if r < lo || r > hi || r >= hi+1 {
		return 0, false
	}
	if s.Signed {
		i := int64(r)
		if s.Bits < 64 {
			return uint64(i) & (1<<uint(s.Bits) - 1), true
		}
		return uint64(i), true
	}
	return uint64(r), true
}

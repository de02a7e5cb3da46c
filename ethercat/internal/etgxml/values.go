package etgxml

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The number forms ETG files use: ETG.2000's HexDecValue is decimal with
// an optional sign or #x followed by hex digits; tools also write #X, 0x
// and 0X. Space around the number is allowed.

// Unsigned is an unsigned integer type a value can be read into.
type Unsigned interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Signed is a signed integer type a value can be read into.
type Signed interface {
	~int8 | ~int16 | ~int32 | ~int64
}

// errNotNumber and errRange are the causes a number is refused for.
var (
	errNotNumber = errors.New("not a number")
	errRange     = errors.New("out of range")
)

// parseMagnitude splits s into its sign and magnitude.
func parseMagnitude(s string) (neg bool, mag uint64, err error) {
	s = strings.TrimSpace(s)
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	base := 10
	if len(s) > 2 && (s[0] == '#' || s[0] == '0') && (s[1] == 'x' || s[1] == 'X') {
		base, s = 16, s[2:]
	}
	if s == "" || s[0] == '+' || s[0] == '-' || strings.Contains(s, "_") {
		return false, 0, errNotNumber
	}
	mag, err = strconv.ParseUint(s, base, 64)
	var ne *strconv.NumError
	if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
		return false, 0, errRange
	}
	if err != nil {
		return false, 0, errNotNumber
	}
	return neg, mag, nil
}

// ParseUint parses s as an unsigned number of at most max. With bits, a
// negative number down to -(max/2+1) is taken as its two's complement bit
// pattern (an auto-increment address written -1 is 0xFFFF).
func ParseUint(s string, max uint64, bits bool) (uint64, error) {
	neg, mag, err := parseMagnitude(s)
	if err != nil {
		return 0, err
	}
	if !neg || mag == 0 {
		if mag > max {
			return 0, errRange
		}
		return mag, nil
	}
	if !bits || mag > max/2+1 {
		return 0, errRange
	}
	return (max - mag + 1) & max, nil
}

// ParseInt parses s as a signed number within [min, max].
func ParseInt(s string, min, max int64) (int64, error) {
	neg, mag, err := parseMagnitude(s)
	if err != nil {
		return 0, err
	}
	if neg {
		if mag > uint64(-(min+1))+1 {
			return 0, errRange
		}
		return int64(-mag), nil
	}
	if mag > uint64(max) {
		return 0, errRange
	}
	return int64(mag), nil
}

// unsignedMax is the largest value of T.
func unsignedMax[T Unsigned]() uint64 { return uint64(^T(0)) }

// signedRange is the range of T.
func signedRange[T Signed]() (int64, int64) {
	var one T = 1
	bits := 8
	for bits < 64 && one<<(bits-1) > 0 {
		bits *= 2
	}
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

// numberMsg says what a number value must look like.
func numberMsg(err error, lo, hi string) string {
	if errors.Is(err, errRange) {
		return fmt.Sprintf("out of range: allowed %s to %s", lo, hi)
	}
	return fmt.Sprintf("not a number: write decimal (1234) or #x hex (#x04D2), %s to %s", lo, hi)
}

// Uint reads e's text as an unsigned number of type T; a nil e reads as 0
// (its absence is the caller's to report). A bad value is recorded in x.
func Uint[T Unsigned](x *Errors, e *Element) T {
	if e == nil {
		return 0
	}
	return uintOf[T](x, e, "", e.Text(), false)
}

// Bits reads e's text like Uint, and also takes a negative number as its
// two's complement bit pattern.
func Bits[T Unsigned](x *Errors, e *Element) T {
	if e == nil {
		return 0
	}
	return uintOf[T](x, e, "", e.Text(), true)
}

// UintAttr reads e's attribute name as an unsigned number and reports
// whether it is present.
func UintAttr[T Unsigned](x *Errors, e *Element, name string) (T, bool) {
	s, ok := e.Attr(name)
	if !ok {
		return 0, false
	}
	return uintOf[T](x, e, name, s, false), true
}

// BitsAttr reads e's attribute name like UintAttr, and also takes a
// negative number as its two's complement bit pattern.
func BitsAttr[T Unsigned](x *Errors, e *Element, name string) (T, bool) {
	s, ok := e.Attr(name)
	if !ok {
		return 0, false
	}
	return uintOf[T](x, e, name, s, true), true
}

func uintOf[T Unsigned](x *Errors, e *Element, attr, s string, bits bool) T {
	max := unsignedMax[T]()
	v, err := ParseUint(s, max, bits)
	if err != nil {
		lo := "0"
		if bits {
			lo = strconv.FormatInt(-int64(max/2)-1, 10)
		}
		x.At(e, attr, s, ErrValue, "%s", numberMsg(err, lo, strconv.FormatUint(max, 10)))
		return 0
	}
	return T(v)
}

// Int reads e's text as a signed number of type T; a nil e reads as 0.
func Int[T Signed](x *Errors, e *Element) T {
	if e == nil {
		return 0
	}
	return intOf[T](x, e, "", e.Text())
}

// IntAttr reads e's attribute name as a signed number and reports whether
// it is present.
func IntAttr[T Signed](x *Errors, e *Element, name string) (T, bool) {
	s, ok := e.Attr(name)
	if !ok {
		return 0, false
	}
	return intOf[T](x, e, name, s), true
}

func intOf[T Signed](x *Errors, e *Element, attr, s string) T {
	lo, hi := signedRange[T]()
	v, err := ParseInt(s, lo, hi)
	if err != nil {
		x.At(e, attr, s, ErrValue, "%s", numberMsg(err, strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10)))
		return 0
	}
	return T(v)
}

// ParseBool parses an xs:boolean: true, false, 1 or 0, in any case.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, errNotNumber
}

// Bool reads e's text as a boolean; a nil e reads as false.
func Bool(x *Errors, e *Element) bool {
	if e == nil {
		return false
	}
	return boolOf(x, e, "", e.Text())
}

// BoolAttr reads e's attribute name as a boolean; an absent attribute
// reads as false.
func BoolAttr(x *Errors, e *Element, name string) bool {
	s, ok := e.Attr(name)
	if !ok {
		return false
	}
	return boolOf(x, e, name, s)
}

func boolOf(x *Errors, e *Element, attr, s string) bool {
	v, err := ParseBool(s)
	if err != nil {
		x.At(e, attr, s, ErrValue, "not a boolean: allowed true, false, 1 or 0")
	}
	return v
}

// Hex reads e's text as hexBinary (pairs of hex digits, white space
// allowed between them); a nil or empty e reads as nil.
func Hex(x *Errors, e *Element) []byte {
	if e == nil {
		return nil
	}
	s := e.Text()
	if s == "" {
		return nil
	}
	s = strings.Join(strings.Fields(s), "")
	b, err := hex.DecodeString(s)
	if err != nil {
		x.At(e, "", s, ErrValue, "not hexBinary: pairs of hex digits, the bytes in file order (0A1B…)")
		return nil
	}
	return b
}

// Need returns e's child name, recording a missing-element error when
// there is none.
func Need(x *Errors, e *Element, name string) *Element {
	c := e.Child(name)
	if c == nil && e != nil {
		x.At(e, "", "", ErrMissing, "required <%s> missing", name)
	}
	return c
}

// NeedAttr returns e's attribute name, recording a missing-attribute
// error when there is none.
func NeedAttr(x *Errors, e *Element, name string) string {
	s, ok := e.Attr(name)
	if !ok && e != nil {
		x.At(e, name, "", ErrMissing, "required attribute %s missing", name)
	}
	return s
}

// OneOf reads e's text as one of allowed (compared without case), returning
// the allowed spelling; anything else is recorded as an error listing them.
func OneOf(x *Errors, e *Element, allowed ...string) string {
	if e == nil {
		return ""
	}
	s := e.Text()
	for _, a := range allowed {
		if strings.EqualFold(s, a) {
			return a
		}
	}
	x.At(e, "", s, ErrValue, "allowed: %s", strings.Join(allowed, ", "))
	return ""
}

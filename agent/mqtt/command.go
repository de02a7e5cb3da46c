package mqtt

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/ecagent/ecagent/agent/mqtt/cmdparse"
)

// RejectCode classifies why a write from MQTT was refused; it is the
// reason label of ecagent_mqtt_commands_total.
type RejectCode string

// Why writes are refused.
const (
	RejectDisabled     RejectCode = "disabled"      // mqtt.writes.enabled is false
	RejectUnknown      RejectCode = "unknown"       // no such slave or signal
	RejectNotWritable  RejectCode = "not_writable"  // an input, or an output not in the allow-list
	RejectMalformed    RejectCode = "malformed"     // the payload is not JSON (or a Sparkplug payload)
	RejectWrongType    RejectCode = "wrong_type"    // a value of the wrong type
	RejectOutOfRange   RejectCode = "out_of_range"  // outside the allowed range
	RejectCycleDown    RejectCode = "cycle_down"    // no cycle process to take it
	RejectQueueFull    RejectCode = "queue_full"    // the command ring is full
	RejectCycleRefused RejectCode = "cycle_refused" // the cycle refused it
	RejectRetained     RejectCode = "retained"      // delivered with the retain flag: a stored command, not a live one
	RejectStale        RejectCode = "stale"         // its timestamp is further from the agent's clock than MaxCommandAge
	RejectDuplicate    RejectCode = "duplicate"     // a second copy of a command taken already, or a redelivery that may have run
)

// RejectError is a refused write.
type RejectError struct {
	Code   RejectCode
	Reason string
}

func (e *RejectError) Error() string { return "write rejected (" + string(e.Code) + "): " + e.Reason }

func reject(code RejectCode, format string, args ...any) *RejectError {
	return &RejectError{Code: code, Reason: fmt.Sprintf(format, args...)}
}

// ParseCommandValue parses the payload of a write to signal s: a JSON
// value (true, 1, -3.25) or an object {"value": …} with, optionally, the
// command's time {"value": …, "ts": <ms since the Unix epoch>} (whose age
// the publisher judges, see MaxCommandAge), and nothing else: "1,000",
// "3abc" or {"value": 1, "unit": "mV"} is refused, never read as 1 or 3.
// Booleans take true or false (or 0 and 1); integer signals take integral
// numbers; floating-point signals any number a float64 holds without
// overflow or underflow, in engineering units. The value must lie within
// the signal's [Min, Max] when it is writable, compared as sent, and fit
// its raw bits in any case; a refusal names the value as sent. It returns
// the engineering value and the raw bits to write, or a *RejectError.
func ParseCommandValue(payload []byte, s *Signal) (value float64, raw uint64, err error) {
	v, perr := cmdparse.Parse(payload)
	if perr != nil {
		return 0, 0, reject(RejectMalformed, "%s", perr.Error())
	}
	return checkValue(jsonValue(v), s)
}

// number is a JSON number as written.
type number = json.Number

// nonFinite stands for a NaN or infinite value of a Sparkplug command.
type nonFinite struct{}

// checkValue checks a decoded value (bool, number, string, nil, nonFinite
// or anything else) against signal s; see ParseCommandValue.
func checkValue(v any, s *Signal) (value float64, raw uint64, err error) {
	var sent string // the value as sent, for a refusal
	switch x := v.(type) {
	case *RejectError:
		return 0, 0, x
	case nonFinite:
		return 0, 0, reject(RejectOutOfRange, "%s: not a finite number", s.Name)
	case bool:
		if s.Type != TypeBool {
			return 0, 0, reject(RejectWrongType, "%s is %s, got a boolean", s.Name, describeType(s))
		}
		sent = strconv.FormatBool(x)
		if x {
			value = 1
		}
	case json.Number:
		f, err := parseNumber(string(x), s)
		if err != nil {
			return 0, 0, err
		}
		value, sent = f, string(x)
	case string:
		return 0, 0, reject(RejectWrongType, "%s is %s, got the string %s", s.Name, describeType(s), cmdparse.Quote([]byte(x)))
	case nil:
		return 0, 0, reject(RejectWrongType, "%s is %s, got null", s.Name, describeType(s))
	default:
		return 0, 0, reject(RejectWrongType, "%s is %s, got an array or object", s.Name, describeType(s))
	}
	if s.Writable && (beyond(value, sent, s.Min, -1) || beyond(value, sent, s.Max, 1)) {
		return 0, 0, reject(RejectOutOfRange, "%s must be within %s..%s, got %s", s.Name,
			formatBound(s.Min), formatBound(s.Max), sent)
	}
	raw, ok := s.rawFor(value)
	if !ok {
		return 0, 0, reject(RejectOutOfRange, "%s does not fit the %d-bit raw value of %s", sent, s.Bits, s.Name)
	}
	return value, raw, nil
}

// parseNumber reads lit, a JSON number as sent, for signal s. It refuses
// what a float64 cannot hold: beyond its range (1e400), or so small that
// it would become 0 or lose digits (1e-400, 4e-310: underflow); and, for
// a boolean or integer signal, a number that is integral only once
// rounded to a float64 (3.0000000000000000001 is not 3).
func parseNumber(lit string, s *Signal) (float64, *RejectError) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, reject(RejectOutOfRange, "%s is too large a number", lit)
	}
	if f == 0 && !zeroLiteral(lit) || f != 0 && math.Abs(f) < minNormal {
		return 0, reject(RejectOutOfRange, "%s is too small a number (not 0, and below 2.2e-308: it would be written as 0)", lit)
	}
	switch s.Type {
	case TypeBool:
		if f != 0 && f != 1 || !integral(f, lit) {
			return 0, reject(RejectWrongType, "%s is a boolean (true, false, 0 or 1), got %s", s.Name, lit)
		}
	case TypeInt, TypeUint:
		if !integral(f, lit) {
			return 0, reject(RejectWrongType, "%s is an integer, got %s", s.Name, lit)
		}
	}
	return f, nil
}

// minNormal is the smallest positive normal float64; below it a float64
// holds fewer digits, down to 0.
const minNormal = 0x1p-1022

// zeroLiteral reports whether the JSON number lit is zero as written: no
// digit but 0 in its mantissa.
func zeroLiteral(lit string) bool {
	for _, c := range lit {
		switch {
		case c == 'e' || c == 'E':
			return true
		case c >= '1' && c <= '9':
			return false
		}
	}
	return true
}

// exact returns the JSON number lit as an exact rational. Callers pass a
// literal whose float64 value is finite and not below minNormal in
// magnitude (never 0: "0e-999999" would cost a power of ten of a million
// digits), so its exponent, and the size of the result, are bounded by
// the length of a payload.
func exact(lit string) *big.Rat {
	r, ok := new(big.Rat).SetString(lit)
	if !ok {
		return nil
	}
	return r
}

// integral reports whether lit, whose float64 value is f, is an integer
// as written, not only once rounded.
func integral(f float64, lit string) bool {
	if f != math.Trunc(f) {
		return false
	}
	if f == 0 || !strings.ContainsAny(lit, ".eE") {
		return true
	}
	r := exact(lit)
	return r != nil && r.IsInt()
}

// beyond reports whether value, sent as the literal sent ("" when the
// value is exact), lies beyond bound on the side of dir (-1 below, +1
// above). A value that equals the bound only once rounded to a float64
// is compared as sent: 5.00000000000000000001 is beyond 5.
func beyond(value float64, sent string, bound float64, dir int) bool {
	if c := cmpFloat(value, bound); c != 0 {
		return c == dir
	}
	if sent == "" || value == 0 || math.IsInf(bound, 0) {
		return false // 0 is sent exactly: a literal that only rounds to 0 is refused before
	}
	r, b := exact(sent), new(big.Rat)
	if r == nil || b.SetFloat64(bound) == nil {
		return false
	}
	return r.Cmp(b) == dir
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// jsonValue returns a parsed JSON value as checkValue takes it. Numbers
// stay json.Number, as sent.
func jsonValue(v cmdparse.Value) any {
	switch v.Kind {
	case cmdparse.KindBool:
		return v.Bool
	case cmdparse.KindNumber:
		return json.Number(v.Text)
	case cmdparse.KindString:
		return v.Text
	case cmdparse.KindNull:
		return nil
	}
	return []any{}
}

func describeType(s *Signal) string {
	switch s.Type {
	case TypeBool:
		return "a boolean"
	case TypeInt, TypeUint:
		return "an integer"
	}
	return "a number"
}

func formatBound(f float64) string { return strconv.FormatFloat(f, 'g', 10, 64) }

// commandTarget splits the levels after …/set/ into slave and signal.
func commandTarget(rest string) (slave, signal string, ok bool) {
	slave, signal, err := cmdparse.Target(rest)
	return slave, signal, err == nil
}

// asReject returns err as a *RejectError (wrapping other errors as
// malformed input).
func asReject(err error) *RejectError {
	var re *RejectError
	if errors.As(err, &re) {
		return re
	}
	return reject(RejectMalformed, "%v", err)
}

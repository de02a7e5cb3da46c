package mqtt

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/ecagent/ecagent/mqtt/cmdparse"
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
// value (true, 1, -3.25) or an object {"value": …} (other members are
// ignored), and nothing else: "1,000" or "3abc" is refused, never read as
// 1 or 3. Booleans take true or false (or 0 and 1); integer signals
// take integral numbers; floating-point signals any number, in
// engineering units. The value must lie within the signal's [Min, Max]
// when it is writable, and fit its raw bits in any case. It returns the
// engineering value and the raw bits to write, or a *RejectError.
func ParseCommandValue(payload []byte, s *Signal) (value float64, raw uint64, err error) {
	v, perr := decodeCommandJSON(payload)
	if perr != nil {
		return 0, 0, perr
	}
	return checkValue(v, s)
}

// number is a JSON number as written.
type number = json.Number

// nonFinite stands for a NaN or infinite value of a Sparkplug command.
type nonFinite struct{}

// checkValue checks a decoded value (bool, number, string, nil, nonFinite
// or anything else) against signal s; see ParseCommandValue.
func checkValue(v any, s *Signal) (value float64, raw uint64, err error) {
	switch x := v.(type) {
	case *RejectError:
		return 0, 0, x
	case nonFinite:
		return 0, 0, reject(RejectOutOfRange, "%s: not a finite number", s.Name)
	case bool:
		if s.Type != TypeBool {
			return 0, 0, reject(RejectWrongType, "%s is %s, got a boolean", s.Name, describeType(s))
		}
		if x {
			value = 1
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			return 0, 0, reject(RejectOutOfRange, "%s is too large a number", string(x))
		}
		switch s.Type {
		case TypeBool:
			if f != 0 && f != 1 {
				return 0, 0, reject(RejectWrongType, "%s is a boolean (true, false, 0 or 1), got %s", s.Name, string(x))
			}
		case TypeInt, TypeUint:
			if f != math.Trunc(f) {
				return 0, 0, reject(RejectWrongType, "%s is an integer, got %s", s.Name, string(x))
			}
		}
		value = f
	case string:
		return 0, 0, reject(RejectWrongType, "%s is %s, got the string %s", s.Name, describeType(s), cmdparse.Quote([]byte(x)))
	case nil:
		return 0, 0, reject(RejectWrongType, "%s is %s, got null", s.Name, describeType(s))
	default:
		return 0, 0, reject(RejectWrongType, "%s is %s, got an array or object", s.Name, describeType(s))
	}
	if s.Writable && (value < s.Min || value > s.Max) {
		return 0, 0, reject(RejectOutOfRange, "%s must be within %s..%s, got %s", s.Name,
			formatBound(s.Min), formatBound(s.Max), formatBound(value))
	}
	raw, ok := s.rawFor(value)
	if !ok {
		return 0, 0, reject(RejectOutOfRange, "%s does not fit the %d-bit raw value of %s", formatBound(value), s.Bits, s.Name)
	}
	return value, raw, nil
}

// decodeCommandJSON decodes a write's payload strictly (cmdparse.Parse):
// one JSON value, or an object whose "value" member is the value. Numbers
// stay json.Number.
func decodeCommandJSON(payload []byte) (any, error) {
	v, err := cmdparse.Parse(payload)
	if err != nil {
		return nil, reject(RejectMalformed, "%s", err.Error())
	}
	switch v.Kind {
	case cmdparse.KindBool:
		return v.Bool, nil
	case cmdparse.KindNumber:
		return json.Number(v.Text), nil
	case cmdparse.KindString:
		return v.Text, nil
	case cmdparse.KindNull:
		return nil, nil
	}
	return []any{}, nil
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

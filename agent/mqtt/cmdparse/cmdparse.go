// Package cmdparse parses what a write from MQTT carries: the value of a
// JSON-scheme payload and the levels of its topic. It is a leaf package
// (standard library only), so that its fuzz binary links only the parser.
//
// Parsing is strict: a payload is exactly one JSON value, or an object
// with exactly one "value" member (and, optionally, the command's time
// "ts"), and nothing else but JSON whitespace.
// A typo such as "1,000", "3abc", "0x10", "-4.5V", "2]" or "4}" is
// refused as a whole; it is never read as the number it starts with.
package cmdparse

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxPayload bounds the payload of a write; anything longer is no single
// value.
const MaxPayload = 1024

// Kind is the JSON type of a parsed value. The zero value is invalid.
type Kind uint8

// The kinds of value.
const (
	KindInvalid   Kind = iota
	KindBool           // true or false
	KindNumber         // a JSON number, kept as written
	KindString         // a JSON string
	KindNull           // null
	KindComposite      // an array, or an object given as the value
)

// Value is a parsed write value.
type Value struct {
	Kind Kind
	// Bool is the value of a KindBool.
	Bool bool
	// Text is a KindNumber's literal as written (valid JSON number
	// syntax) or a KindString's decoded text.
	Text string
	// TS is the command's time in milliseconds since the Unix epoch, when
	// the object carries "ts" (HasTS).
	TS    int64
	HasTS bool
}

// Error is a refused payload. Reason names the payload and what is
// allowed.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return e.Reason }

// Allowed says what a write payload may be.
const Allowed = `want one JSON value: true, false, a number such as 2.5, -3 or 1e3 (no units, no thousands separators, no hex), or {"value": …}`

// AllowedObject says what an object payload may hold.
const AllowedObject = `want {"value": …} or {"value": …, "ts": <milliseconds since the Unix epoch>}, nothing else`

// quoteLimit bounds how much of a refused payload a reason quotes.
const quoteLimit = 64

// Quote returns payload as a Go-quoted string for a reason, cut at
// quoteLimit bytes (on a rune boundary) with "…" after the quote.
func Quote(payload []byte) string {
	if len(payload) <= quoteLimit {
		return strconv.Quote(string(payload))
	}
	cut := quoteLimit
	for cut > 0 && !utf8.RuneStart(payload[cut]) {
		cut--
	}
	return strconv.Quote(string(payload[:cut])) + "…"
}

func refuse(what string, payload []byte) error {
	return &Error{Reason: what + " " + Quote(payload) + "; " + Allowed}
}

// Parse parses the payload of a write: one JSON value, or an object with
// exactly one "value" member (the value) and, optionally, one "ts" member
// (the command's time, an integer number of milliseconds since the Unix
// epoch; the caller judges its age). Any other member is refused, and
// named: {"value": 1, "unit": "mV"} is not 1. Leading and trailing JSON
// whitespace is allowed, nothing else. On error the Value is zero and the
// error is an *Error.
func Parse(payload []byte) (Value, error) {
	p := bytes.Trim(payload, " \t\r\n")
	switch {
	case len(p) == 0:
		return Value{}, &Error{Reason: "empty payload; " + Allowed}
	case len(payload) > MaxPayload:
		return Value{}, &Error{Reason: "payload of " + strconv.Itoa(len(payload)) + " bytes; a write carries one value of at most " +
			strconv.Itoa(MaxPayload) + " bytes"}
	case !json.Valid(p):
		return Value{}, refuse("not a single JSON value:", p)
	}
	if p[0] != '{' {
		return scalar(p)
	}
	return object(p)
}

// object parses p, a valid JSON object: its members "value" (exactly one)
// and "ts" (at most one), nothing else. Keys are compared decoded, so
// that an escaped "\u0076alue" is "value" too.
func object(p []byte) (Value, error) {
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil { // {
		return Value{}, refuse("not a single JSON value:", p)
	}
	var inner, ts json.RawMessage
	values, stamps := 0, 0
	var other *string // the first member that is neither
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			return Value{}, refuse("not a single JSON value:", p)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Value{}, refuse("not a single JSON value:", p)
		}
		switch key {
		case "value":
			values++
			inner = raw
		case "ts":
			stamps++
			ts = raw
		default:
			if other == nil {
				other = &key
			}
		}
	}
	switch {
	case values == 0:
		return Value{}, &Error{Reason: `the object ` + Quote(p) + ` has no "value" member; ` + Allowed}
	case other != nil:
		return Value{}, &Error{Reason: `the object ` + Quote(p) + ` has a member ` + Quote([]byte(*other)) + ` besides "value"; ` + AllowedObject}
	case values > 1:
		return Value{}, &Error{Reason: `the object ` + Quote(p) + ` has ` + strconv.Itoa(values) + ` "value" members; want exactly one`}
	case stamps > 1:
		return Value{}, &Error{Reason: `the object ` + Quote(p) + ` has ` + strconv.Itoa(stamps) + ` "ts" members; want at most one`}
	}
	var v Value
	if inner[0] == '{' {
		v = Value{Kind: KindComposite}
	} else {
		var err error
		if v, err = scalar(inner); err != nil {
			return Value{}, err
		}
	}
	if stamps == 1 {
		ms, err := parseTS(ts)
		if err != nil {
			return Value{}, err
		}
		v.TS, v.HasTS = ms, true
	}
	return v, nil
}

// maxTSDigits bounds the digits of "ts": 13 digits of milliseconds reach
// the year 2286.
const maxTSDigits = 15

// parseTS parses the value of "ts": a non-negative JSON integer (digits
// only: no sign, fraction or exponent) of at most maxTSDigits digits.
func parseTS(raw []byte) (int64, error) {
	ok := len(raw) > 0 && len(raw) <= maxTSDigits
	for _, c := range raw {
		ok = ok && c >= '0' && c <= '9'
	}
	if ok {
		if ms, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return ms, nil
		}
	}
	return 0, &Error{Reason: `"ts" must be the command's time in milliseconds since the Unix epoch, an integer such as 1718000000000; got ` + Quote(raw)}
}

// scalar returns the value of p, valid JSON that is not an object.
func scalar(p []byte) (Value, error) {
	switch p[0] {
	case 't':
		return Value{Kind: KindBool, Bool: true}, nil
	case 'f':
		return Value{Kind: KindBool}, nil
	case 'n':
		return Value{Kind: KindNull}, nil
	case '[', '{':
		return Value{Kind: KindComposite}, nil
	case '"':
		var s string
		if err := json.Unmarshal(p, &s); err != nil {
			return Value{}, refuse("not a single JSON value:", p)
		}
		return Value{Kind: KindString, Text: s}, nil
	}
	return Value{Kind: KindNumber, Text: string(p)}, nil
}

// ErrTarget is returned by Target for topic levels that are not
// <slave>/<signal>.
var ErrTarget = errors.New("want <slave>/<signal>")

// Target splits the topic levels after …/set/ into slave and signal:
// exactly two non-empty levels.
func Target(rest string) (slave, signal string, err error) {
	slave, signal, ok := strings.Cut(rest, "/")
	if !ok || slave == "" || signal == "" || strings.Contains(signal, "/") {
		return "", "", ErrTarget
	}
	return slave, signal, nil
}

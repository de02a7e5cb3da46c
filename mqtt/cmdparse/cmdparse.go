// Package cmdparse parses what a write from MQTT carries: the value of a
// JSON-scheme payload and the levels of its topic. It is a leaf package
// (standard library only), so that its fuzz binary links only the parser.
//
// Parsing is strict: a payload is exactly one JSON value, or an object
// with exactly one "value" member, and nothing else but JSON whitespace.
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
}

// Error is a refused payload. Reason names the payload and what is
// allowed.
type Error struct {
	Reason string
}

func (e *Error) Error() string { return e.Reason }

// Allowed says what a write payload may be.
const Allowed = `want one JSON value: true, false, a number such as 2.5, -3 or 1e3 (no units, no thousands separators, no hex), or {"value": …}`

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

// Parse parses the payload of a write: one JSON value, or an object whose
// "value" member (exactly one) is the value; other members of the object
// are ignored. Leading and trailing JSON whitespace is allowed, nothing
// else. On error the Value is zero and the error is an *Error.
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
		v, err := scalar(p)
		if err != nil {
			return Value{}, err
		}
		return v, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(p, &members); err != nil {
		return Value{}, refuse("not a single JSON value:", p)
	}
	inner, ok := members["value"]
	if !ok {
		return Value{}, &Error{Reason: `the object ` + Quote(p) + ` has no "value" member; ` + Allowed}
	}
	if n := valueMembers(p); n != 1 {
		return Value{}, &Error{Reason: `the object ` + Quote(p) + ` has ` + strconv.Itoa(n) + ` "value" members; want exactly one`}
	}
	if len(inner) > 0 && inner[0] == '{' {
		return Value{Kind: KindComposite}, nil
	}
	return scalar(inner)
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

// valueMembers counts the top-level members of the JSON object p (valid
// JSON) whose key is "value", however the key is escaped.
func valueMembers(p []byte) int {
	dec := json.NewDecoder(bytes.NewReader(p))
	if _, err := dec.Token(); err != nil { // {
		return 0
	}
	n := 0
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return n
		}
		if key == "value" {
			n++
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return n
		}
	}
	return n
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

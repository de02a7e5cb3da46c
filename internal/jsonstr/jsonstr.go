// Package jsonstr appends strings to a byte slice as JSON string literals,
// allocating nothing beyond the slice's growth: the one encoder of strings
// behind the hand-built JSON of the MQTT payloads and the cyclictest-format
// reports, kept apart so that its fuzz binary links nothing else.
package jsonstr

import "unicode/utf8"

// Append appends s to b as a JSON string literal and returns the extended
// slice. Invalid UTF-8 becomes U+FFFD, one per bad byte, as encoding/json
// does; control characters, DEL and the characters HTML treats specially
// (<, >, &) are escaped, so the literal is safe inside HTML and a terminal.
func Append(b []byte, s string) []byte { return appendString(b, s, true) }

// AppendPlain is Append without the escapes for <, > and &, for files
// that other tools write that way (cyclictest's --json).
func AppendPlain(b []byte, s string) []byte { return appendString(b, s, false) }

// appendString is Append, escaping <, > and & when html is true.
func appendString(b []byte, s string, html bool) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == 0x7F || html && (c == '<' || c == '>' || c == '&'):
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

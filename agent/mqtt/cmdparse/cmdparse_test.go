package cmdparse

import (
	"errors"
	"strings"
	"testing"
)

// TestParseTypos: the typos of issue 18, each of which used to write the
// number it starts with, are refused whole, with a reason that names the
// payload and what is allowed.
func TestParseTypos(t *testing.T) {
	t.Parallel()
	for _, payload := range []string{
		"1,000", "3abc", "0x10", "-4.5V", "2]", "4}", "1 2", "true false", "tru", "1.", ".5", "+1", "01", "1e", "NaN",
		"Infinity", "--1", "1_000", `{"value": 1}}`, `{"value": 1} x`, `{"value": 1,}`, `[1]]`, `"on`, "1\x00", "１",
	} {
		v, err := Parse([]byte(payload))
		var e *Error
		if !errors.As(err, &e) || v != (Value{}) {
			t.Errorf("Parse(%q) = %+v, %v; want a refusal", payload, v, err)
			continue
		}
		if !strings.Contains(e.Reason, Quote([]byte(payload))) || !strings.Contains(e.Reason, Allowed) {
			t.Errorf("Parse(%q): reason %q names neither the payload nor what is allowed", payload, e.Reason)
		}
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		payload string
		want    Value
		refused string // part of the reason; "" accepted
	}{
		{"true", Value{Kind: KindBool, Bool: true}, ""},
		{" false\r\n", Value{Kind: KindBool}, ""},
		{"-4.5", Value{Kind: KindNumber, Text: "-4.5"}, ""},
		{"1e3", Value{Kind: KindNumber, Text: "1e3"}, ""},
		{"1E+3", Value{Kind: KindNumber, Text: "1E+3"}, ""},
		{"-0", Value{Kind: KindNumber, Text: "-0"}, ""},
		{"1e999", Value{Kind: KindNumber, Text: "1e999"}, ""}, // refused later, as out of range
		{"null", Value{Kind: KindNull}, ""},
		{`"on"`, Value{Kind: KindString, Text: "on"}, ""},
		{`"\u006fn"`, Value{Kind: KindString, Text: "on"}, ""},
		{"[1]", Value{Kind: KindComposite}, ""},
		{`{"value": 2.5, "id": "x", "v": [1, {"value": 3}]}`, Value{}, `has a member "id" besides "value"`},
		{`{"value":1.25,"x":1}`, Value{}, `has a member "x" besides "value"; ` + AllowedObject},
		{`{"value":1.75,"value2":9}`, Value{}, `has a member "value2" besides "value"`},
		{`{"value":1,"unit":"mV"}`, Value{}, `has a member "unit" besides "value"`},
		{`{"unit":"mV","value":1}`, Value{}, `has a member "unit" besides "value"`},
		{`{"value":1,"":2}`, Value{}, `has a member "" besides "value"`},
		{`{"value":1,"\u0078":2}`, Value{}, `has a member "x" besides "value"`},
		{`{"value": 2.5, "ts": 1718000000123}`, Value{Kind: KindNumber, Text: "2.5", TS: 1718000000123, HasTS: true}, ""},
		{`{"ts": 0, "value": true}`, Value{Kind: KindBool, Bool: true, HasTS: true}, ""},
		{`{"value": 1, "ts": 1.5}`, Value{}, `"ts" must be the command's time`},
		{`{"value": 1, "ts": 1e12}`, Value{}, `"ts" must be the command's time`},
		{`{"value": 1, "ts": -1}`, Value{}, `"ts" must be the command's time`},
		{`{"value": 1, "ts": "1718000000123"}`, Value{}, `"ts" must be the command's time`},
		{`{"value": 1, "ts": 99999999999999999999}`, Value{}, `"ts" must be the command's time`},
		{`{"value": 1, "ts": 1, "ts": 2}`, Value{}, `has 2 "ts" members`},
		{`{"ts": 1}`, Value{}, `has no "value" member`},
		{`{"value": {"value": 1}}`, Value{Kind: KindComposite}, ""},
		{`{"value": [1]}`, Value{Kind: KindComposite}, ""},
		{`{"\u0076alue": true}`, Value{Kind: KindBool, Bool: true}, ""},
		{`{"v": true}`, Value{}, `has no "value" member`},
		{`{"value": 1, "value": 5}`, Value{}, `has 2 "value" members`},
		{`{"value": 1, "\u0076alue": 5}`, Value{}, `has 2 "value" members`},
		{"", Value{}, "empty payload"},
		{" \t", Value{}, "empty payload"},
		{strings.Repeat(" ", MaxPayload) + "1", Value{}, "bytes; a write carries one value"},
	}
	for _, tt := range tests {
		v, err := Parse([]byte(tt.payload))
		if tt.refused == "" {
			if err != nil || v != tt.want {
				t.Errorf("Parse(%q) = %+v, %v; want %+v", tt.payload, v, err, tt.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.refused) || v != (Value{}) {
			t.Errorf("Parse(%q) = %+v, %v; want a refusal saying %q", tt.payload, v, err, tt.refused)
		}
	}
}

func TestQuoteCutsOnARune(t *testing.T) {
	t.Parallel()
	q := Quote([]byte(strings.Repeat("a", quoteLimit-1) + "é" + "tail"))
	if !strings.HasSuffix(q, `"…`) || strings.Contains(q, `\x`) {
		t.Fatalf("Quote = %s", q)
	}
}

func TestTarget(t *testing.T) {
	t.Parallel()
	for rest, ok := range map[string]bool{"a/b": true, "a/b/c": false, "/b": false, "a/": false, "": false, "a": false, "a//b": false} {
		s, sig, err := Target(rest)
		if (err == nil) != ok || (ok && s+"/"+sig != rest) {
			t.Errorf("Target(%q) = %q, %q, %v", rest, s, sig, err)
		}
	}
}

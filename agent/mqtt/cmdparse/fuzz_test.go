package cmdparse

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics; a refusal is an *Error with a reason and
// a zero Value; what it accepts is a whole JSON document (nothing before
// or after it but whitespace) whose value, or whose single "value"
// member, is the Value it returns.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"true", "false", "1", "-4.5", "1e999", "null", `"x"`, "[1]", `{"value": 3}`, `{"value": 1, "value": 2}`,
		`{"v": 1}`, "1,000", "3abc", "0x10", "-4.5V", "2]", "4}", "", " ", "{", `{"value": {"value": 1}}`,
		`{"value":1.25,"x":1}`, `{"value":1.75,"value2":9}`, `{"value":1,"unit":"mV"}`, `{"value":1,"ts":1718000000000}`,
		`{"ts":1,"value":true,"ts":2}`, `{"value":1,"ts":-1}`, "1e-400", "5.0000000001"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		v, err := Parse(payload)
		if err != nil {
			if e, ok := err.(*Error); !ok || e.Reason == "" || v != (Value{}) {
				t.Fatalf("Parse(%q) = %+v, %v", payload, v, err)
			}
			return
		}
		trimmed := bytes.Trim(payload, " \t\r\n")
		if !json.Valid(trimmed) || len(payload) > MaxPayload {
			t.Fatalf("Parse(%q) accepted what is not one JSON value", payload)
		}
		var whole any
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		if err := dec.Decode(&whole); err != nil {
			t.Fatal(err)
		}
		inner := whole
		if obj, ok := whole.(map[string]any); ok {
			inner = obj["value"]
			for k := range obj {
				if k != "value" && k != "ts" {
					t.Fatalf("Parse(%q) accepted a member %q besides \"value\"", payload, k)
				}
			}
			if ts, ok := obj["ts"]; ok != v.HasTS || ok && ts != json.Number(strconv.FormatInt(v.TS, 10)) {
				t.Fatalf("Parse(%q) = %+v, JSON says ts %v", payload, v, ts)
			}
		} else if v.HasTS {
			t.Fatalf("Parse(%q) = %+v: a time without an object", payload, v)
		}
		switch v.Kind {
		case KindBool:
			if inner != v.Bool {
				t.Fatalf("Parse(%q) = %+v, JSON says %v", payload, v, inner)
			}
		case KindNumber:
			if n, ok := inner.(json.Number); !ok || string(n) != v.Text {
				t.Fatalf("Parse(%q) = %+v, JSON says %v", payload, v, inner)
			}
			if _, err := strconv.ParseFloat(v.Text, 64); err != nil && !strings.Contains(err.Error(), "range") {
				t.Fatalf("Parse(%q): number %q: %v", payload, v.Text, err)
			}
		case KindString:
			if inner != v.Text {
				t.Fatalf("Parse(%q) = %+v, JSON says %v", payload, v, inner)
			}
		case KindNull:
			if inner != nil {
				t.Fatalf("Parse(%q) = %+v, JSON says %v", payload, v, inner)
			}
		case KindComposite:
			switch inner.(type) {
			case []any, map[string]any:
			default:
				t.Fatalf("Parse(%q) = %+v, JSON says %v", payload, v, inner)
			}
		default:
			t.Fatalf("Parse(%q) = %+v", payload, v)
		}
	})
}

// FuzzTarget: Target never panics, and what it accepts is exactly two
// non-empty levels that join back to its input.
func FuzzTarget(f *testing.F) {
	for _, s := range []string{"EL2004-1/channel_1.output", "a/b/c", "/x", "x/", "", "x", "a//b", "drive/drive-fault-reset"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rest string) {
		slave, signal, err := Target(rest)
		if err != nil {
			if strings.Count(rest, "/") == 1 && !strings.HasPrefix(rest, "/") && !strings.HasSuffix(rest, "/") {
				t.Fatalf("refused %q, two non-empty levels", rest)
			}
			return
		}
		if slave == "" || signal == "" || strings.Contains(slave, "/") || strings.Contains(signal, "/") || slave+"/"+signal != rest {
			t.Fatalf("Target(%q) = %q, %q", rest, slave, signal)
		}
	})
}

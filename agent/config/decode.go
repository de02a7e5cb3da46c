package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// decode turns a raw value from any layer (YAML scalars and sequences,
// environment strings, typed flag values) into the Go type of f. On failure
// it returns a problem sentence for a [FieldError].
func decode(f field, raw any) (any, string) {
	switch f.kind {
	case kindString:
		return decodeString(raw)
	case kindInt:
		return decodeInt(raw)
	case kindBool:
		return decodeBool(raw)
	case kindDuration:
		return decodeDuration(raw)
	case kindStrings:
		return decodeStrings(raw)
	}
	return nil, "unsupported key type"
}

func decodeString(raw any) (any, string) {
	switch v := raw.(type) {
	case string:
		return v, ""
	case int, int64, uint64:
		// An unquoted number such as `line: 3` is meant as text.
		return fmt.Sprint(v), ""
	}
	return nil, "must be " + kindString.String() + " (quote it)"
}

func decodeInt(raw any) (any, string) {
	const want = "must be an integer"
	switch v := raw.(type) {
	case int:
		return v, ""
	case int64:
		if v < math.MinInt || v > math.MaxInt {
			return nil, want + " in range"
		}
		return int(v), ""
	case uint64:
		if v > math.MaxInt {
			return nil, want + " in range"
		}
		return int(v), ""
	case float64:
		if v != math.Trunc(v) || v < math.MinInt || v > math.MaxInt {
			return nil, want
		}
		return int(v), ""
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, want
		}
		return n, ""
	}
	return nil, want
}

func decodeBool(raw any) (any, string) {
	const want = "must be true or false"
	switch v := raw.(type) {
	case bool:
		return v, ""
	case string:
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return nil, want
		}
		return b, ""
	}
	return nil, want
}

func decodeDuration(raw any) (any, string) {
	const want = `must be a duration with a unit, e.g. "1ms", "250us" or "5s"`
	switch v := raw.(type) {
	case time.Duration:
		return v, ""
	case string:
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			return nil, want
		}
		return d, ""
	case int, int64, uint64, float64:
		// A bare number has no unit; only zero means the same in every unit.
		if fmt.Sprint(v) == "0" {
			return time.Duration(0), ""
		}
		return nil, want + " (a bare number has no unit)"
	}
	return nil, want
}

func decodeStrings(raw any) (any, string) {
	const want = "must be a list of strings"
	switch v := raw.(type) {
	case []string:
		return append([]string(nil), v...), ""
	case []any:
		out := make([]string, 0, len(v))
		for _, item := range v {
			s, problem := decodeString(item)
			if problem != "" {
				return nil, want
			}
			out = append(out, s.(string))
		}
		return out, ""
	case string:
		// Environment variables and flags carry lists comma separated.
		var out []string
		for item := range strings.SplitSeq(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
		return out, ""
	}
	return nil, want
}

// formatValue renders a raw value as the user wrote it, for error messages.
func formatValue(raw any) string {
	switch v := raw.(type) {
	case nil:
		return ""
	case string:
		return v
	case time.Duration:
		return formatDuration(v)
	case contract.Duration:
		return formatDuration(time.Duration(v))
	case []string:
		return strings.Join(v, ",")
	case []any:
		parts := make([]string, len(v))
		for i, item := range v {
			parts[i] = formatValue(item)
		}
		return strings.Join(parts, ",")
	case map[string]any:
		return "{…}"
	}
	return fmt.Sprint(raw)
}

// formatDuration writes d as the file takes it back ("250us", "10ms").
func formatDuration(d time.Duration) string { return contract.FormatDuration(d) }

package config

import (
	"reflect"
	"testing"
	"time"
)

func TestDecode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		kind    kind
		raw     any
		want    any
		wantErr bool
	}{
		{"string", kindString, "eth1", "eth1", false},
		{"unquoted integer as string", kindString, 3, "3", false},
		{"float as string", kindString, 1.5, nil, true},
		{"list as string", kindString, []any{"a"}, nil, true},
		{"int", kindInt, 7, 7, false},
		{"int64", kindInt, int64(-1), -1, false},
		{"integral float", kindInt, 80.0, 80, false},
		{"fractional float", kindInt, 80.5, nil, true},
		{"numeric string", kindInt, " 42 ", 42, false},
		{"word as int", kindInt, "two", nil, true},
		{"bool", kindBool, false, false, false},
		{"bool string", kindBool, "TRUE", true, false},
		{"yes is not a bool", kindBool, "yes", nil, true},
		{"number as bool", kindBool, 1, nil, true},
		{"duration string", kindDuration, "250us", 250 * time.Microsecond, false},
		{"duration with micro sign", kindDuration, "250µs", 250 * time.Microsecond, false},
		{"typed duration from a flag", kindDuration, 2 * time.Millisecond, 2 * time.Millisecond, false},
		{"zero without a unit", kindDuration, 0, time.Duration(0), false},
		{"number without a unit", kindDuration, 5, nil, true},
		{"garbage duration", kindDuration, "soon", nil, true},
		{"bool as duration", kindDuration, true, nil, true},
		{"YAML list", kindStrings, []any{"EK1100", "EL2004"}, []string{"EK1100", "EL2004"}, false},
		{"flag list", kindStrings, []string{"a"}, []string{"a"}, false},
		{"comma list", kindStrings, " a, b ,,c ", []string{"a", "b", "c"}, false},
		{"list with a mapping", kindStrings, []any{map[string]any{"a": 1}}, nil, true},
		{"number as list", kindStrings, 3, nil, true},
	}
	for _, tt := range tests {
		got, problem := decode(field{key: "k", kind: tt.kind}, tt.raw)
		if (problem != "") != tt.wantErr {
			t.Errorf("%s: decode(%v) problem %q, want error %v", tt.name, tt.raw, problem, tt.wantErr)
			continue
		}
		if !tt.wantErr && !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: decode(%v) = %#v, want %#v", tt.name, tt.raw, got, tt.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{250 * time.Microsecond, "250us"},
		{1500 * time.Microsecond, "1500us"},
		{time.Millisecond, "1ms"},
		{90 * time.Second, "90s"},
		{5 * time.Minute, "5m"},
		{2 * time.Hour, "2h"},
		{1001, "1001ns"},
		{-time.Millisecond, "-1ms"},
	}
	for _, tt := range tests {
		if got := formatDuration(tt.d); got != tt.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
		if back, err := time.ParseDuration(formatDuration(tt.d)); err != nil || back != tt.d {
			t.Errorf("formatDuration(%v) does not parse back: %v, %v", tt.d, back, err)
		}
	}
}

func TestClosestKey(t *testing.T) {
	t.Parallel()
	known := newSchema().keys()
	tests := []struct {
		in, want string
	}{
		{"cycle.perod", "cycle.period"},
		{"Cycle.Period", "cycle.period"},
		{"bus.expected_slaves", "bus.expectedslaves"},
		{"bus.expected.slaves", "bus.expectedslaves"},
		{"period", "cycle.period"}, // right key, wrong section
		{"metrics.priority", "cycle.priority"},
		{"modbus.qqqqqq", ""},
		{"level", "log.level"},
		{"zzzzzzzz", ""},
	}
	for _, tt := range tests {
		if got := closestKey(tt.in, known); got != tt.want {
			t.Errorf("closestKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"period", "perod", 1},
	}
	for _, tt := range tests {
		if got := EditDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestErrorTexts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{&FieldError{Key: "cycle.period", Value: "10us", Problem: "must be between 50us and 1s"},
			`config: cycle.period = "10us": must be between 50us and 1s`},
		{&FieldError{Key: "cycle.core", Value: "9", Source: "ECAGENT_CYCLE_CORE", Problem: "p"},
			`config: cycle.core = "9" (ECAGENT_CYCLE_CORE): p`},
		{&UnknownKeyError{Key: "cycle.perod", Source: "a.yaml:3", Suggestion: "cycle.period"},
			`config: unknown key "cycle.perod" (a.yaml:3); did you mean "cycle.period"?`},
		{&UnknownKeyError{Key: "x"}, `config: unknown key "x"`},
		{&FileError{Path: "a.yaml", Err: errString("yaml: line 2: bad")}, `config: file a.yaml: yaml: line 2: bad`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

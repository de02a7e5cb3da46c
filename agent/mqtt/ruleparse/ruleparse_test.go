package ruleparse

import (
	"strings"
	"testing"
	"time"
)

func TestParseSlaveRule(t *testing.T) {
	tests := []struct {
		in      string
		want    SlaveRule
		problem string
	}{
		{"3", SlaveRule{Slave: "3"}, ""},
		{"3 name=valves interval=1s onchange=true", SlaveRule{Slave: "3", Name: "valves", Interval: time.Second, OnChange: true, HasOnChange: true}, ""},
		{"EL2004-1  onchange=false", SlaveRule{Slave: "EL2004-1", HasOnChange: true}, ""},
		{"", SlaveRule{}, "empty"},
		{"3 name=a/b", SlaveRule{}, "topic level"},
		{"3 interval=0s", SlaveRule{}, "positive duration"},
		{"3 interval=10", SlaveRule{}, "positive duration"},
		{"3 onchange=maybe", SlaveRule{}, "true or false"},
		{"3 speed=1", SlaveRule{}, `unknown option "speed"`},
		{"3 name=a name=b", SlaveRule{}, "twice"},
		{"3 name", SlaveRule{}, "key=value"},
		{"name=x", SlaveRule{}, "starts with what it applies to"},
		{"EL2004-1/channel_1.output", SlaveRule{}, "names a signal"},
	}
	for _, tt := range tests {
		got, err := ParseSlaveRule(tt.in)
		if tt.problem == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseSlaveRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.problem) {
			t.Errorf("ParseSlaveRule(%q) error %v, want one mentioning %q", tt.in, err, tt.problem)
		}
	}
}

func TestParseSignalRule(t *testing.T) {
	tests := []struct {
		in      string
		want    SignalRule
		problem string
	}{
		{"EL3204-4/rtd.value name=oven unit=°C scale=0.1 offset=-5 deadband=0.5 type=float",
			SignalRule{Slave: "EL3204-4", Signal: "rtd.value", Name: "oven", Unit: "°C", Type: "float",
				Scale: 0.1, Offset: -5, Deadband: 0.5, HasScale: true, HasOffset: true, HasDeadband: true}, ""},
		{"2/channel_1.input type=bool", SignalRule{Slave: "2", Signal: "channel_1.input", Type: "bool"}, ""},
		{"EL3204-4", SignalRule{}, "SLAVE/SIGNAL"},
		{"EL3204-4/", SignalRule{}, "SLAVE/SIGNAL"},
		{"a/b/c", SignalRule{}, "SLAVE/SIGNAL"},
		{"a/* unit=V", SignalRule{}, "only allowed in mqtt.writes.allow"},
		{"a/b+ unit=V", SignalRule{}, "wildcards"},
		{"a/b scale=0", SignalRule{}, "scale 0"},
		{"a/b scale=x", SignalRule{}, "want a number"},
		{"a/b scale=NaN", SignalRule{}, "want a number"},
		{"a/b deadband=-1", SignalRule{}, "negative"},
		{"a/b type=string", SignalRule{}, "bool, int, uint or float"},
	}
	for _, tt := range tests {
		got, err := ParseSignalRule(tt.in)
		if tt.problem == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseSignalRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.problem) {
			t.Errorf("ParseSignalRule(%q) error %v, want one mentioning %q", tt.in, err, tt.problem)
		}
	}
}

func TestParseWriteRule(t *testing.T) {
	tests := []struct {
		in      string
		want    WriteRule
		problem string
	}{
		{"EL2004-1/*", WriteRule{Slave: "EL2004-1", Signal: "*"}, ""},
		{"EL4132-5/ao.x -10..10", WriteRule{Slave: "EL4132-5", Signal: "ao.x", Min: -10, Max: 10, Limited: true}, ""},
		{"5/ao.x 0.5..1e3", WriteRule{Slave: "5", Signal: "ao.x", Min: 0.5, Max: 1000, Limited: true}, ""},
		{"", WriteRule{}, "empty"},
		{"a/b 1..2 3", WriteRule{}, "3 fields"},
		{"a/b 10", WriteRule{}, "MIN..MAX"},
		{"a/b 10..x", WriteRule{}, "two numbers"},
		{"a/b 10..-10", WriteRule{}, "MIN is above MAX"},
		{"a", WriteRule{}, "SLAVE/SIGNAL"},
	}
	for _, tt := range tests {
		got, err := ParseWriteRule(tt.in)
		if tt.problem == "" {
			if err != nil || got != tt.want {
				t.Errorf("ParseWriteRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.problem) {
			t.Errorf("ParseWriteRule(%q) error %v, want one mentioning %q", tt.in, err, tt.problem)
		}
	}
}

func TestIsPosition(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "17": 17, "-1": -1, "EL2004-1": -1, "": -1} {
		n, ok := IsPosition(in)
		if (want >= 0) != ok || (ok && n != want) {
			t.Errorf("IsPosition(%q) = %d, %v", in, n, ok)
		}
	}
}

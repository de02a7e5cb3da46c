// Package ruleparse parses the one-line rules of the MQTT configuration: how a
// slave is published (mqtt.slaves), how a signal is named, typed and scaled
// (mqtt.signals), and which outputs MQTT may write within which range
// (mqtt.writes.allow).
//
// Every rule starts with its target, followed by key=value options
// separated by white space:
//
//	3 name=inputs-left interval=1s onchange=true          (a slave)
//	EL3204-4/rtd_inputs_channel_1.value name=oven unit=°C scale=0.1 deadband=0.5
//	EL4132-5/ao_output_channel_1.analog_output -10..10     (a write rule)
//
// A slave is named by its ring position (a number) or by its published
// name; a signal by its published name within the slave. The rules are
// resolved against the bus by package mqtt; here they are only parsed, so
// that the configuration can reject a malformed rule at start.
package ruleparse

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// SlaveRule overrides how one slave is published (an mqtt.slaves entry).
type SlaveRule struct {
	// Slave is the slave as written: a ring position ("3") or a name.
	Slave string
	// Name is the name to publish the slave under; "" keeps the default.
	Name string
	// Interval is the slave's publish interval; 0 keeps mqtt.interval.
	Interval time.Duration
	// OnChange, when HasOnChange, overrides mqtt.onchange for the slave.
	OnChange, HasOnChange bool
}

// SignalRule overrides how one signal is published (an mqtt.signals
// entry). Engineering value = raw × Scale + Offset.
type SignalRule struct {
	// Slave and Signal name the signal as written.
	Slave, Signal string
	// Name is the name to publish the signal under; "" keeps the default.
	Name string
	// Unit is the engineering unit, e.g. "°C"; "" keeps the default.
	Unit string
	// Type is bool, int, uint or float; "" keeps the type the device
	// description gives.
	Type string
	// Scale, Offset and Deadband apply when their Has flag is set.
	Scale, Offset, Deadband          float64
	HasScale, HasOffset, HasDeadband bool
}

// WriteRule allows MQTT to write one output (an mqtt.writes.allow entry).
type WriteRule struct {
	// Slave and Signal name the output as written; Signal "*" allows every
	// output of the slave.
	Slave, Signal string
	// Min and Max bound the engineering value when Limited; without a range
	// the signal's type bounds it.
	Min, Max float64
	Limited  bool
}

// Types lists the values SignalRule.Type may take.
func Types() []string { return []string{"bool", "int", "uint", "float"} }

// ParseSlaveRule parses an mqtt.slaves entry such as
// "3 name=valves interval=1s onchange=true".
func ParseSlaveRule(s string) (SlaveRule, error) {
	target, opts, err := split(s)
	if err != nil {
		return SlaveRule{}, err
	}
	if strings.Contains(target, "/") {
		return SlaveRule{}, fmt.Errorf("%q names a signal; a slave rule names a slave (its ring position or name)", target)
	}
	r := SlaveRule{Slave: target}
	for _, o := range opts {
		switch o.key {
		case "name":
			if err := checkName(o.value); err != nil {
				return SlaveRule{}, fmt.Errorf("name: %w", err)
			}
			r.Name = o.value
		case "interval":
			d, err := time.ParseDuration(o.value)
			if err != nil || d <= 0 {
				return SlaveRule{}, fmt.Errorf("interval %q: want a positive duration such as 100ms", o.value)
			}
			r.Interval = d
		case "onchange":
			b, err := strconv.ParseBool(o.value)
			if err != nil {
				return SlaveRule{}, fmt.Errorf("onchange %q: want true or false", o.value)
			}
			r.OnChange, r.HasOnChange = b, true
		default:
			return SlaveRule{}, fmt.Errorf("unknown option %q (want name, interval or onchange)", o.key)
		}
	}
	return r, nil
}

// ParseSignalRule parses an mqtt.signals entry such as
// "EL3204-4/rtd_inputs_channel_1.value name=oven unit=°C scale=0.1".
func ParseSignalRule(s string) (SignalRule, error) {
	target, opts, err := split(s)
	if err != nil {
		return SignalRule{}, err
	}
	slave, signal, err := splitTarget(target, false)
	if err != nil {
		return SignalRule{}, err
	}
	r := SignalRule{Slave: slave, Signal: signal}
	for _, o := range opts {
		switch o.key {
		case "name":
			if err := checkName(o.value); err != nil {
				return SignalRule{}, fmt.Errorf("name: %w", err)
			}
			r.Name = o.value
		case "unit":
			r.Unit = o.value
		case "type":
			if !contains(Types(), o.value) {
				return SignalRule{}, fmt.Errorf("type %q: want bool, int, uint or float", o.value)
			}
			r.Type = o.value
		case "scale", "offset", "deadband":
			v, err := parseFloat(o.value)
			if err != nil {
				return SignalRule{}, fmt.Errorf("%s %q: want a number", o.key, o.value)
			}
			switch o.key {
			case "scale":
				if v == 0 {
					return SignalRule{}, fmt.Errorf("scale 0 would map every raw value to the offset")
				}
				r.Scale, r.HasScale = v, true
			case "offset":
				r.Offset, r.HasOffset = v, true
			default:
				if v < 0 {
					return SignalRule{}, fmt.Errorf("deadband %q: must not be negative", o.value)
				}
				r.Deadband, r.HasDeadband = v, true
			}
		default:
			return SignalRule{}, fmt.Errorf("unknown option %q (want name, unit, type, scale, offset or deadband)", o.key)
		}
	}
	return r, nil
}

// ParseWriteRule parses an mqtt.writes.allow entry: "SLAVE/SIGNAL" or
// "SLAVE/SIGNAL MIN..MAX", SIGNAL "*" for every output of the slave.
func ParseWriteRule(s string) (WriteRule, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return WriteRule{}, fmt.Errorf("empty rule; want SLAVE/SIGNAL [MIN..MAX]")
	}
	if len(fields) > 2 {
		return WriteRule{}, fmt.Errorf("want SLAVE/SIGNAL [MIN..MAX], got %d fields", len(fields))
	}
	slave, signal, err := splitTarget(fields[0], true)
	if err != nil {
		return WriteRule{}, err
	}
	r := WriteRule{Slave: slave, Signal: signal}
	if len(fields) == 2 {
		lo, hi, ok := strings.Cut(fields[1], "..")
		if !ok {
			return WriteRule{}, fmt.Errorf("range %q: want MIN..MAX, e.g. -10..10", fields[1])
		}
		low, err1 := parseFloat(lo)
		high, err2 := parseFloat(hi)
		if err1 != nil || err2 != nil {
			return WriteRule{}, fmt.Errorf("range %q: want MIN..MAX with two numbers", fields[1])
		}
		if low > high {
			return WriteRule{}, fmt.Errorf("range %q: MIN is above MAX", fields[1])
		}
		r.Min, r.Max, r.Limited = low, high, true
	}
	return r, nil
}

// IsPosition reports whether a rule's slave names a ring position.
func IsPosition(slave string) (int, bool) {
	n, err := strconv.Atoi(slave)
	return n, err == nil && n >= 0
}

type option struct{ key, value string }

// split cuts a rule into its target and key=value options.
func split(s string) (string, []option, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return "", nil, fmt.Errorf("empty rule")
	}
	var opts []option
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok || k == "" || v == "" {
			return "", nil, fmt.Errorf("option %q: want key=value", f)
		}
		if seen[k] {
			return "", nil, fmt.Errorf("option %s given twice", k)
		}
		seen[k] = true
		opts = append(opts, option{k, v})
	}
	if strings.Contains(fields[0], "=") {
		return "", nil, fmt.Errorf("%q: a rule starts with what it applies to, then key=value options", fields[0])
	}
	return fields[0], opts, nil
}

// splitTarget cuts SLAVE/SIGNAL; the signal name may itself contain no
// '/'. wildcard allows SIGNAL "*".
func splitTarget(target string, wildcard bool) (string, string, error) {
	slave, signal, ok := strings.Cut(target, "/")
	if !ok || slave == "" || signal == "" || strings.Contains(signal, "/") {
		return "", "", fmt.Errorf("%q: want SLAVE/SIGNAL, e.g. EL2004-1/channel_1.output", target)
	}
	if signal == "*" && !wildcard {
		return "", "", fmt.Errorf("%q: '*' is only allowed in mqtt.writes.allow", target)
	}
	if strings.ContainsAny(slave+signal, "+#") {
		return "", "", fmt.Errorf("%q: names must not contain the MQTT wildcards '+' or '#'", target)
	}
	return slave, signal, nil
}

// checkName accepts a name that is usable as one MQTT topic level.
func checkName(s string) error {
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) || strings.ContainsRune("/+#", r) {
			return fmt.Errorf("%q: must not contain spaces, '/', '+' or '#' (it is an MQTT topic level)", s)
		}
	}
	return nil
}

func parseFloat(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("not a finite number: %q", s)
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

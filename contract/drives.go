package contract

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
)

// Drive is one CiA 402 drive (an item of drives). In the cycle's JSON
// every key of an item must be given: items have no defaults there (the
// agent starts an item from [DefaultDrive]).
type Drive struct {
	// Slave is the drive's ring position (0 is the first slave).
	Slave int `json:"slave" koanf:"slave" help:"ring position of the drive, 0 for the first slave"`
	// Mode is csp, csv or cst (cyclic synchronous position, velocity,
	// torque).
	Mode string `json:"mode" koanf:"mode" help:"csp, csv or cst: cyclic synchronous position, velocity or torque"`
	// Target is what the drive is commanded once operation is enabled.
	Target Target `json:"target" koanf:"target" help:"the target once the drive is enabled, in the mode's units: counts (csp, added to the position at enable), counts/s (csv), per mille of rated torque (cst)"`
	// FaultReset is manual (reset on request only) or auto.
	FaultReset string `json:"faultreset" koanf:"faultreset" help:"manual (reset a fault only on request) or auto (reset every fault, retrying while it persists); default manual"`
	// SettleCycles is how many cycles the target is held after the drive
	// reaches operation enabled.
	SettleCycles int `json:"settlecycles" koanf:"settlecycles" help:"cycles the target is held (at 0, or at the position at enable for csp) after operation enabled before it follows the profile; default 10"`
}

// DefaultDrive is a drives item before its keys are read.
func DefaultDrive() Drive {
	return Drive{FaultReset: "manual", SettleCycles: DefaultSettleCycles}
}

// Target is a drive's set-point profile, a function of the time since the
// drive became operational: constant (Value), ramp (From, To, Duration) or
// sine (Offset, Amplitude, Period). Each field serves the kinds named in
// its use tag; a field another kind uses must be left out (or 0).
type Target struct {
	// Kind is constant, ramp or sine.
	Kind string `json:"kind" koanf:"kind" help:"constant (value), ramp (from, to, duration, then holds to) or sine (offset + amplitude·sin(2π·t/period))"`
	// Value is the constant target.
	Value int `json:"value,omitempty" koanf:"value" use:"constant" help:"the target of a constant"`
	// From, To and Duration make a ramp.
	From     int      `json:"from,omitempty" koanf:"from" use:"ramp" help:"where a ramp starts"`
	To       int      `json:"to,omitempty" koanf:"to" use:"ramp" help:"where a ramp ends and then stays"`
	Duration Duration `json:"duration,omitempty" koanf:"duration" use:"ramp" help:"how long a ramp takes, more than 0"`
	// Offset, Amplitude and Period make a sine.
	Offset    int      `json:"offset,omitempty" koanf:"offset" use:"sine" help:"centre of a sine"`
	Amplitude int      `json:"amplitude,omitempty" koanf:"amplitude" use:"sine" help:"amplitude of a sine, not 0"`
	Period    Duration `json:"period,omitempty" koanf:"period" use:"sine" help:"period of a sine, at least two cycle periods"`
}

// Bounds and defaults of the items of drives.
const (
	DefaultSettleCycles = 10        // drives[].settlecycles when not given
	MaxSettleCycles     = 1_000_000 // largest drives[].settlecycles
)

// Drive modes, target kinds and fault reset policies, as written.
var (
	driveModes  = []string{"csp", "csv", "cst"}
	targetKinds = []string{"constant", "ramp", "sine"}
	faultResets = []string{"manual", "auto"}
)

func (c Config) driveProblems(p *problems) {
	seen := map[int]int{}
	for i, d := range c.Drives {
		key := fmt.Sprintf("drives[%d]", i)
		c.slaveProblem(p, key+".slave", d.Slave, seen, i, "drives")
		if !slices.Contains(driveModes, d.Mode) {
			p.add(key+".mode", d.Mode, "must be csp, csv or cst")
		}
		if !slices.Contains(faultResets, d.FaultReset) {
			p.add(key+".faultreset", d.FaultReset, "must be manual or auto")
		}
		if n := d.SettleCycles; n < 0 || n > MaxSettleCycles {
			p.add(key+".settlecycles", n, fmt.Sprintf("must be between 0 and %d", MaxSettleCycles))
		}
		d.Target.problems(p, key+".target", d.Mode, c.Cycle.Period)
	}
}

// targetLimits returns the range of the mode's target object.
func targetLimits(mode string) (lo, hi int64, object string) {
	switch mode {
	case "cst":
		return math.MinInt16, math.MaxInt16, "the cst target 0x6071 is 16 bits"
	case "csv":
		return math.MinInt32, math.MaxInt32, "the csv target 0x60FF is 32 bits"
	}
	return math.MinInt32, math.MaxInt32, "the csp target 0x607A is 32 bits"
}

// problems checks a drive's target for its kind and its mode's range.
func (t Target) problems(p *problems, key, mode string, period Duration) {
	if !slices.Contains(targetKinds, t.Kind) {
		p.add(key+".kind", t.Kind, "must be constant, ramp or sine")
		return
	}
	// A field of another kind is a mistake (a ramp with a period).
	for _, f := range targetFields(t) {
		if f.use != "" && !slices.Contains(strings.Split(f.use, ","), t.Kind) && !f.value.IsZero() {
			p.add(key+"."+f.name, f.value.Interface(), fmt.Sprintf("a %s target does not use %s; it uses %s", t.Kind, f.name, kindFieldNames(t.Kind)))
		}
	}
	lo, hi, why := targetLimits(mode)
	fits := func(sub string, v int64) {
		if v < lo || v > hi {
			p.add(key+"."+sub, v, fmt.Sprintf("must be between %d and %d (%s)", lo, hi, why))
		}
	}
	switch t.Kind {
	case "constant":
		fits("value", int64(t.Value))
	case "ramp":
		if t.Duration <= 0 {
			p.add(key+".duration", t.Duration, "a ramp needs a duration of more than 0")
		}
		fits("from", int64(t.From))
		fits("to", int64(t.To))
	case "sine":
		t.sineProblems(p, key, period, lo, hi, why)
	}
}

// sineProblems checks a sine target against the cycle period and the
// range lo..hi of the mode's target object (why says which).
func (t Target) sineProblems(p *problems, key string, period Duration, lo, hi int64, why string) {
	if t.Period < 2*period {
		p.add(key+".period", t.Period, fmt.Sprintf("a sine needs a period of at least two cycle periods (%s)", 2*period))
	}
	if t.Amplitude == 0 {
		p.add(key+".amplitude", t.Amplitude, "a sine needs an amplitude other than 0 (use kind constant for a fixed target)")
	}
	if o := int64(t.Offset); o < lo || o > hi {
		p.add(key+".offset", o, fmt.Sprintf("must be between %d and %d (%s)", lo, hi, why))
	}
	a := int64(t.Amplitude)
	if a < 0 {
		a = -a
	}
	if o := int64(t.Offset); o-a < lo || o+a > hi {
		p.add(key+".amplitude", t.Amplitude, fmt.Sprintf("offset ± amplitude must stay between %d and %d (%s)", lo, hi, why))
	}
}

// targetField is one field of a Target by its koanf tag.
type targetField struct {
	name, use string
	value     reflect.Value
}

// targetFields lists the fields of t with the kinds that use them.
func targetFields(t Target) []targetField {
	v := reflect.ValueOf(t)
	out := make([]targetField, v.NumField())
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		out[i] = targetField{name: sf.Tag.Get("koanf"), use: sf.Tag.Get("use"), value: v.Field(i)}
	}
	return out
}

// kindFieldNames lists the keys a target kind uses: "from, to and
// duration".
func kindFieldNames(kind string) string {
	var names []string
	for _, f := range targetFields(Target{}) {
		if slices.Contains(strings.Split(f.use, ","), kind) {
			names = append(names, f.name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

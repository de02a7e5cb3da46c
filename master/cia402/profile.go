package cia402

import (
	"fmt"
	"math"
	"time"
)

// ProfileKind is the shape of a [Profile].
type ProfileKind uint8

// Profile shapes. The zero value is invalid.
const (
	ProfileInvalid  ProfileKind = iota
	ProfileConstant             // Value for ever
	ProfileRamp                 // From to To in Duration, then To
	ProfileSine                 // Offset + Amplitude·sin(2π·t/Period)
)

// String names the kind as the configuration does.
func (k ProfileKind) String() string {
	switch k {
	case ProfileConstant:
		return "constant"
	case ProfileRamp:
		return "ramp"
	case ProfileSine:
		return "sine"
	}
	return "invalid"
}

// Profile is a target as a function of the time since the drive became
// live (operation enabled and settled). Values are in the drive's units of
// the mode's target object: counts/s for CSV, per mille of the rated
// torque for CST, counts relative to the position at enable for CSP. It is
// a plain value: evaluating it allocates nothing.
type Profile struct {
	Kind      ProfileKind
	Value     float64       // constant
	From, To  float64       // ramp
	Duration  time.Duration // ramp
	Offset    float64       // sine
	Amplitude float64       // sine
	Period    time.Duration // sine
}

// Constant returns a profile that is v at all times.
func Constant(v float64) Profile { return Profile{Kind: ProfileConstant, Value: v} }

// Ramp returns a profile that goes linearly from `from` to `to` in d and
// then holds `to`. A d of 0 or less is a step to `to`.
func Ramp(from, to float64, d time.Duration) Profile {
	return Profile{Kind: ProfileRamp, From: from, To: to, Duration: d}
}

// Sine returns offset + amplitude·sin(2π·t/period).
func Sine(offset, amplitude float64, period time.Duration) Profile {
	return Profile{Kind: ProfileSine, Offset: offset, Amplitude: amplitude, Period: period}
}

// At returns the profile's value at elapsed time t; before 0 it is the
// value at 0.
func (p Profile) At(t time.Duration) float64 {
	t = max(t, 0)
	switch p.Kind {
	case ProfileConstant:
		return p.Value
	case ProfileRamp:
		if t >= p.Duration {
			return p.To
		}
		return p.From + (p.To-p.From)*float64(t)/float64(p.Duration)
	case ProfileSine:
		if p.Period <= 0 {
			return p.Offset
		}
		// Reduce t modulo the period first, so that long runs keep
		// their precision.
		phase := float64(t%p.Period) / float64(p.Period)
		return p.Offset + p.Amplitude*math.Sin(2*math.Pi*phase)
	}
	return 0
}

// Validate reports a profile that cannot be evaluated meaningfully.
func (p Profile) Validate() error {
	switch p.Kind {
	case ProfileConstant:
	case ProfileRamp:
		if p.Duration < 0 {
			return fmt.Errorf("cia402: ramp duration %v: must not be negative", p.Duration)
		}
	case ProfileSine:
		if p.Period <= 0 {
			return fmt.Errorf("cia402: sine period %v: must be positive", p.Period)
		}
	default:
		return fmt.Errorf("cia402: profile kind %d: must be constant, ramp or sine", p.Kind)
	}
	return nil
}

// Range returns the smallest and largest value the profile takes.
func (p Profile) Range() (lo, hi float64) {
	switch p.Kind {
	case ProfileConstant:
		return p.Value, p.Value
	case ProfileRamp:
		return min(p.From, p.To), max(p.From, p.To)
	case ProfileSine:
		a := math.Abs(p.Amplitude)
		return p.Offset - a, p.Offset + a
	}
	return 0, 0
}

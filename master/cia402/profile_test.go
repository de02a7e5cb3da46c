package cia402

import (
	"math"
	"testing"
	"time"
)

func TestProfileAt(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name string
		p    Profile
		at   time.Duration
		want float64
	}{
		{"constant", Constant(250), 0, 250},
		{"constant later", Constant(-3), time.Hour, -3},
		{"ramp start", Ramp(0, 1000, 100*ms), 0, 0},
		{"ramp before start", Ramp(10, 1000, 100*ms), -ms, 10},
		{"ramp middle", Ramp(0, 1000, 100*ms), 25 * ms, 250},
		{"ramp down", Ramp(500, -500, 10*ms), 5 * ms, 0},
		{"ramp end", Ramp(0, 1000, 100*ms), 100 * ms, 1000},
		{"ramp holds", Ramp(0, 1000, 100*ms), time.Minute, 1000},
		{"zero-length ramp is a step", Ramp(0, 7, 0), 0, 7},
		{"sine at 0", Sine(100, 50, 40*ms), 0, 100},
		{"sine quarter", Sine(100, 50, 40*ms), 10 * ms, 150},
		{"sine half", Sine(100, 50, 40*ms), 20 * ms, 100},
		{"sine three quarters", Sine(100, 50, 40*ms), 30 * ms, 50},
		{"sine after many periods", Sine(0, 1000, time.Second), 1_000_000*time.Second + 250*ms, 1000},
		{"sine without a period", Profile{Kind: ProfileSine, Offset: 4}, time.Second, 4},
		{"invalid kind", Profile{}, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.p.At(tt.at); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("%s: At(%v) = %v, want %v", tt.name, tt.at, got, tt.want)
		}
	}
}

func TestProfileValidateAndRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p       Profile
		wantErr bool
		lo, hi  float64
	}{
		{Constant(5), false, 5, 5},
		{Ramp(10, -10, time.Second), false, -10, 10},
		{Ramp(0, 1, -1), true, 0, 1},
		{Sine(100, -50, time.Second), false, 50, 150},
		{Sine(0, 1, 0), true, -1, 1},
		{Profile{}, true, 0, 0},
	}
	for _, tt := range tests {
		if err := tt.p.Validate(); (err != nil) != tt.wantErr {
			t.Errorf("%+v: Validate() = %v, want error %v", tt.p, err, tt.wantErr)
		}
		if lo, hi := tt.p.Range(); lo != tt.lo || hi != tt.hi {
			t.Errorf("%+v: Range() = %v, %v; want %v, %v", tt.p, lo, hi, tt.lo, tt.hi)
		}
	}
	for k, w := range map[ProfileKind]string{ProfileConstant: "constant", ProfileRamp: "ramp", ProfileSine: "sine", ProfileInvalid: "invalid"} {
		if k.String() != w {
			t.Errorf("ProfileKind(%d) = %q, want %q", k, k.String(), w)
		}
	}
}

func TestProfileAtDoesNotAllocate(t *testing.T) {
	p := Sine(0, 100, time.Second)
	if n := testing.AllocsPerRun(100, func() { p.At(123 * time.Millisecond) }); n != 0 {
		t.Errorf("At allocates %v times", n)
	}
}

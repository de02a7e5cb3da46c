package master

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestConfigDefaultsAndLimits(t *testing.T) {
	c, err := (*Config)(nil).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.Timeout != DefaultTimeout || c.Retries != DefaultRetries || c.StateTimeout != DefaultStateTimeout ||
		c.CycleTimeout != DefaultCycleTimeout || c.MaxFrameData != maxLRWData || c.Clock == nil || c.Logger == nil {
		t.Errorf("defaults %+v", c)
	}
	if c, _ := (&Config{Retries: -1}).withDefaults(); c.Retries != 0 {
		t.Errorf("Retries -1 gave %d, want no retry", c.Retries)
	}
	for _, bad := range []struct {
		cfg  Config
		want string
	}{
		{Config{Timeout: -time.Second}, "Timeout"},
		{Config{StateTimeout: -1}, "StateTimeout"},
		{Config{ExpectedSlaves: -2}, "ExpectedSlaves"},
		{Config{MaxFrameData: maxLRWData + 1}, "MaxFrameData is 1473, want 1 to 1472"},
		{Config{SafeOpFrames: -1}, "SafeOpFrames"},
	} {
		if _, err := bad.cfg.withDefaults(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: err %v, want one naming %q", bad.cfg, err, bad.want)
		}
	}
}

// TestDefaultClockIsClockMonotonic: without Config.Clock the master
// reads CLOCK_MONOTONIC itself, the cycle's clock, with no offset taken
// between two clocks (which a preemption between the two reads made wrong).
func TestDefaultClockIsClockMonotonic(t *testing.T) {
	cfg, err := (&Config{}).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		var ts unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		before := ts.Nano()
		got := cfg.Clock()
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		if after := ts.Nano(); got < before || got > after {
			t.Fatalf("clock %d outside [%d, %d]", got, before, after)
		}
	}
}

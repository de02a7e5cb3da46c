package config

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
)

// TestCycleConfig: the cycle process gets the keys as configured, but the
// built-in simulated segment's frames get simulatedFrameTimeout at least.
func TestCycleConfig(t *testing.T) {
	t.Parallel()
	c := Default()
	if got := c.CycleConfig(); time.Duration(got.Bus.Timeout) != simulatedFrameTimeout ||
		got.Cycle != c.Cycle || got.Log != c.Log {
		t.Errorf("the simulated segment's: %+v", got)
	}
	c.Bus.Interface = "eth1"
	if got := c.CycleConfig(); got.Bus.Timeout != c.Bus.Timeout {
		t.Errorf("on an interface bus.timeout %v, configured %v", got.Bus.Timeout, c.Bus.Timeout)
	}
}

// TestCycleConfigOfExamples: every example configuration gives the cycle
// process a configuration it accepts, and it reads back what the agent
// meant, but the keys only the agent reads.
func TestCycleConfigOfExamples(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("../../deploy/examples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, path := range append(paths, "testdata/example.yaml") {
		cfg, err := Load(Sources{File: path, Models: deployModels})
		if err != nil {
			t.Fatal(err)
		}
		c := cfg.CycleConfig()
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := contract.Parse(b)
		if err != nil {
			t.Errorf("%s: the cycle refuses the agent's configuration: %v\n%s", path, err, b)
			continue
		}
		// What it reads, written again, is what the agent wrote: the keys
		// only the agent reads (json:"-") are in neither.
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(b) {
			t.Errorf("%s: the cycle reads\n%s\nthe agent wrote\n%s", path, again, b)
		}
	}
}

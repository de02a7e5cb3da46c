package config

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/internal/testsupport"
)

func TestSchemaKeys(t *testing.T) {
	t.Parallel()
	s := newSchema()
	// Every key in order, one a line; go test -update rewrites the file.
	testsupport.Golden(t, "testdata/keys.golden", []byte(strings.Join(s.keys(), "\n")+"\n"))
	for _, f := range s.fields {
		// The environment mapping turns '_' into '.', so keys must not
		// contain '_' and must be lower case to round-trip.
		if strings.ContainsAny(f.key, "_ ") || f.key != strings.ToLower(f.key) {
			t.Errorf("key %q breaks the environment mapping", f.key)
		}
		if got := envKey(EnvName(f.key)); got != f.key {
			t.Errorf("envKey(EnvName(%q)) = %q", f.key, got)
		}
		if f.help == "" {
			t.Errorf("key %s has no help text", f.key)
		}
	}
	for _, sec := range s.sections {
		if sec.help == "" {
			t.Errorf("section %s has no help text", sec.key)
		}
	}
}

func TestEnvName(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"cycle.period":       "ECAGENT_CYCLE_PERIOD",
		"bus.interface":      "ECAGENT_BUS_INTERFACE",
		"bus.expectedslaves": "ECAGENT_BUS_EXPECTEDSLAVES",
		"site":               "ECAGENT_SITE",
	}
	for key, want := range tests {
		if got := EnvName(key); got != want {
			t.Errorf("EnvName(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestRegisterFlags(t *testing.T) {
	t.Parallel()
	fset := pflag.NewFlagSet("run", pflag.ContinueOnError)
	RegisterFlags(fset)
	if f := fset.Lookup(FlagConfigFile); f == nil || !strings.Contains(f.Usage, "FILE") {
		t.Errorf("--config missing or undocumented: %+v", f)
	}
	def := Default()
	configUsage := fset.Lookup(FlagConfigFile).Usage
	for _, fld := range newSchema().fields {
		f := fset.Lookup(fld.key)
		if fld.kind == kindList {
			// Lists of mappings have no flag; --config names them and
			// where their keys are described (Describe).
			if f != nil {
				t.Errorf("list of mappings %s has a flag", fld.key)
			}
			if !strings.Contains(configUsage, fld.key) || !strings.Contains(configUsage, "ecagent config schema") {
				t.Errorf("--config usage does not point to %s:\n%s", fld.key, configUsage)
			}
			continue
		}
		if f == nil {
			t.Errorf("no flag --%s", fld.key)
			continue
		}
		if !strings.Contains(f.Usage, fld.help) || !strings.Contains(f.Usage, EnvName(fld.key)) {
			t.Errorf("--%s usage %q lacks the help text or %s", fld.key, f.Usage, EnvName(fld.key))
		}
		if got, want := f.DefValue, flagDefault(fld.get(&def)); got != want {
			t.Errorf("--%s default = %q, want %q", fld.key, got, want)
		}
	}
	usage := fset.FlagUsages()
	for _, want := range []string{"--cycle.period duration", "--bus.interface string", "--config FILE", "(default 1ms)",
		"--bus.dc.sync0shift duration", "--bus.dc.enabled", "(default 15000)"} {
		if !strings.Contains(usage, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}

// flagDefault renders a default the way pflag does.
func flagDefault(v any) string {
	switch v := v.(type) {
	case time.Duration:
		return v.String()
	case []string:
		return "[" + strings.Join(v, ",") + "]"
	}
	return strings.Trim(strings.TrimSpace(formatValue(v)), "\"")
}

func TestFlagsOnlyOverrideWhenSet(t *testing.T) {
	t.Parallel()
	fset := pflag.NewFlagSet("run", pflag.ContinueOnError)
	RegisterFlags(fset)
	if err := fset.Parse(nil); err != nil {
		t.Fatal(err)
	}
	got, err := Load(Sources{Flags: fset, Environ: []string{"ECAGENT_CYCLE_PERIOD=2ms", "ECAGENT_CYCLE_LOCKMEMORY=false"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Cycle.Period != contract.Duration(2*time.Millisecond) || got.Cycle.LockMemory {
		t.Errorf("unset flags overrode the environment: period %v, lockmemory %v", got.Cycle.Period, got.Cycle.LockMemory)
	}
}

func TestYAMLRoundTrip(t *testing.T) {
	t.Parallel()
	example, err := Load(Sources{File: "testdata/example.yaml", Models: testModels})
	if err != nil {
		t.Fatal(err)
	}
	odd := Default()
	odd.Site = "yes"           // a YAML 1.1 boolean word must stay a string
	odd.Line = "0123"          // and a number-like label too
	odd.Bus.Interface = "eth1" // so that the image path below is not opened
	odd.Bus.Devices = []string{"EK1100", "dumps/a b.bin"}
	odd.Bus.Timeout = contract.Duration(1500 * time.Microsecond)
	odd.Bus.StateTimeout = contract.Duration(90 * time.Second)
	odd.Metrics.Listen = ""
	for name, c := range map[string]Config{"default": Default(), "example": example, "odd": odd} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out, err := c.YAML()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "printed.yaml")
			if err := os.WriteFile(path, out, 0o644); err != nil {
				t.Fatal(err)
			}
			back, err := Load(Sources{File: path})
			if err != nil {
				t.Fatalf("printed config does not load: %v\n%s", err, out)
			}
			if !reflect.DeepEqual(emptyListsNil(back), emptyListsNil(c)) {
				t.Errorf("round trip changed the config:\n got %+v\nwant %+v\n%s", back, c, out)
			}
		})
	}
}

func TestYAMLGolden(t *testing.T) {
	t.Parallel()
	c := Default()
	c.Host = "edge-01" // the OS host name would make the output differ per machine
	got, err := c.YAML()
	if err != nil {
		t.Fatal(err)
	}
	testsupport.Golden(t, "testdata/print-config.golden.yaml", got)
	for _, key := range newSchema().keys() {
		segments := strings.Split(key, ".")
		if !bytes.Contains(got, []byte(segments[len(segments)-1]+":")) {
			t.Errorf("printed config lacks %s", key)
		}
	}
}

// emptyListsNil returns c with every empty list nil: an empty list is
// printed as [] and read back empty, an unset one is nil, and both mean
// the same.
func emptyListsNil(c Config) Config {
	for _, f := range newSchema().fields {
		if l, ok := f.get(&c).([]string); ok && len(l) == 0 {
			f.set(&c, []string(nil))
		}
	}
	return c
}

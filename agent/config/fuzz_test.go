package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// fuzzAllocLimit bounds what one Load of a small input may allocate: a
// configuration file of a few KiB has no business costing more.
const fuzzAllocLimit = 64 << 20

// FuzzLoad feeds Load a YAML file and environment variables (one
// KEY=VALUE per line). Load must never panic and, for inputs of a few KiB,
// never allocate more than fuzzAllocLimit. It either returns a Config that
// passes validation and loads back, unchanged, from its own YAML (what
// --print-config writes; nil and empty lists count as the same), or the zero Config and an error whose every part
// starts with "config:" and is a typed error naming a key or the file.
func FuzzLoad(f *testing.F) {
	for _, path := range fuzzSeedFiles(f) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "")
	}
	def, err := Default().YAML()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(def, "")
	for _, s := range []struct{ yaml, env string }{
		{"cycle:\n  period: 500us\n", "ECAGENT_CYCLE_PERIOD=250us"},
		{"cycle:\n  perod: 2ms\n", "ECAGENT_CYCLE_PEROID=1ms\nECAGENT_LOG=debug"},
		{"cycle: 5\n", "ECAGENT_BUS_DEVICES=EK1100,EL2004\nECAGENT_BUS_EXPECTEDSLAVES=2"},
		{"cycle:\n  period:\n    ms: 1\n", "ECAGENT_CYCLE_CORE=two\nECAGENT_CYCLE_LOCKMEMORY=maybe"},
		{"site: a\nsite: b\n", "ECAGENT_PORT=tcp://10.0.0.1:9781\nNOEQUALS"},
		{"- a\n- b\n", "ECAGENT_MQTT_QOS=3\nECAGENT_MQTT_SCHEME=sparkplug"},
		{"bus:\n  devices: [EK1100, el2004, /nope.bin]\n", "ECAGENT_LOG_LEVEL=WARN\nECAGENT_LOG_FORMAT=Json"},
		{"drives:\n  - slave: 1\n    mode: csv\n    target: {kind: sine, amplitude: 10, period: 1s}\n", "ECAGENT_BUS_DEVICES=EK1100,AKD"},
		{"bus:\n  pdo:\n    - slave: 1\n      rxpdos:\n        - index: 0x1601\n          entries: [\"0x6040:00/16\"]\n", ""},
		{"a: &a [*a, *a]\n", ""},
		{"{}", "ECAGENT_OTLP_ENDPOINT=http://x:4318\nECAGENT_OTLP_PROTOCOL=http"},
		{"mqtt:\n  enabled: true\n  broker: tcp://b:1883\n  writes: {enabled: true, allow: [x]}\n", ""},
	} {
		f.Add([]byte(s.yaml), s.env)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, yaml []byte, environ string) {
		path := filepath.Join(dir, "in.yaml")
		if err := os.WriteFile(path, yaml, 0o600); err != nil {
			t.Fatal(err)
		}
		var env []string
		if environ != "" {
			env = strings.Split(environ, "\n")
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cfg, err := Load(Sources{File: path, Environ: env, Models: deployModels})
		runtime.ReadMemStats(&after)
		if n := after.TotalAlloc - before.TotalAlloc; len(yaml)+len(environ) <= 4096 && n > fuzzAllocLimit {
			t.Fatalf("Load of %d bytes allocated %d bytes", len(yaml)+len(environ), n)
		}
		if err != nil {
			if !reflect.DeepEqual(cfg, Config{}) {
				t.Fatalf("Load returned a Config with the error %v", err)
			}
			for _, e := range leafErrors(err) {
				if problem := loadErrorProblem(e, path); problem != "" {
					t.Fatalf("%s: %T %q", problem, e, e.Error())
				}
			}
			return
		}
		if err := cfg.ValidateWithModels(deployModels); err != nil {
			t.Fatalf("Load accepted a Config that does not validate: %v", err)
		}
		out, err := cfg.YAML()
		if err != nil {
			t.Fatalf("YAML of a loaded Config: %v", err)
		}
		printed := filepath.Join(dir, "printed.yaml")
		if err := os.WriteFile(printed, out, 0o600); err != nil {
			t.Fatal(err)
		}
		again, err := Load(Sources{File: printed, Models: deployModels})
		if err != nil {
			t.Fatalf("the printed configuration does not load: %v\n%s", err, out)
		}
		// Compared as printed: an empty list may come back nil or empty.
		if got, want := fmt.Sprintf("%+v", again), fmt.Sprintf("%+v", cfg); got != want {
			t.Fatalf("the printed configuration loads differently:\n got %s\nwant %s\n%s", got, want, out)
		}
		if out2, err := again.YAML(); err != nil || string(out2) != string(out) {
			t.Fatalf("printing the reloaded configuration: %v\n%s\nwant\n%s", err, out2, out)
		}
	})
}

// fuzzSeedFiles are the configuration files the repository ships.
func fuzzSeedFiles(f *testing.F) []string {
	f.Helper()
	paths := []string{"testdata/example.yaml", "testdata/print-config.golden.yaml"}
	more, err := filepath.Glob("../../deploy/examples/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	return append(paths, more...)
}

// leafErrors flattens errors.Join trees.
func leafErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// loadErrorProblem says what is wrong with one part of an error of Load
// of the file at path, or "".
func loadErrorProblem(err error, path string) string {
	if !strings.HasPrefix(err.Error(), "config: ") {
		return `does not start with "config: "`
	}
	var fe *FieldError
	var ue *UnknownKeyError
	var file *FileError
	switch {
	case errors.As(err, &fe):
		if fe.Key == "" || fe.Problem == "" {
			return "a FieldError without a key or a problem"
		}
	case errors.As(err, &ue):
		if ue.Key == "" && ue.Source == "" {
			return "an UnknownKeyError naming neither key nor source"
		}
	case errors.As(err, &file):
		if file.Path != path || !strings.Contains(err.Error(), path) {
			return "a FileError not naming the file"
		}
	default:
		return "an untyped error"
	}
	return ""
}

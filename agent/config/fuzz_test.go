package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"runtime/metrics"
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
//
// The file's contents reach Load through load's reader instead of a file on
// disk: the reader is the only difference, and it keeps the target fast.
func FuzzLoad(f *testing.F) {
	for _, in := range fuzzLoadSeeds(f) {
		f.Add(in.yaml, in.environ)
	}
	// A Load makes a few hundred KiB of short-lived garbage on a heap of a
	// few MiB: with the default GOGC, collecting costs a third of the time.
	// The allocation bound counts allocated bytes, which GOGC does not
	// change.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	f.Fuzz(func(t *testing.T, yaml []byte, environ string) {
		checkLoad(t, yaml, environ)
	})
}

// BenchmarkFuzzLoad runs FuzzLoad's check over its seeds, to keep an eye on
// how many inputs a second the fuzzer gets through.
func BenchmarkFuzzLoad(b *testing.B) {
	seeds := fuzzLoadSeeds(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		in := seeds[i%len(seeds)]
		checkLoad(b, in.yaml, in.environ)
		i++
	}
}

// loadInput is one input of FuzzLoad.
type loadInput struct {
	yaml    []byte
	environ string
}

// fuzzLoadSeeds are FuzzLoad's seeds: the shipped configuration files, the
// printed defaults and a few broken files and environments.
func fuzzLoadSeeds(tb testing.TB) []loadInput {
	tb.Helper()
	var out []loadInput
	for _, path := range fuzzSeedFiles(tb) {
		data, err := os.ReadFile(path)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, loadInput{data, ""})
	}
	def, err := Default().YAML()
	if err != nil {
		tb.Fatal(err)
	}
	out = append(out, loadInput{def, ""})
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
		out = append(out, loadInput{[]byte(s.yaml), s.env})
	}
	return out
}

// fuzzFile is the name under which FuzzLoad's input is loaded.
const fuzzFile = "fuzz/in.yaml"

// fuzzPrinted is the name under which FuzzLoad loads the printed
// configuration back.
const fuzzPrinted = "fuzz/printed.yaml"

// loadBytes is Load of a configuration file named path whose contents are
// data.
func loadBytes(path string, data []byte, environ []string) (Config, error) {
	return load(Sources{File: path, Environ: environ, Models: deployModels}, func(p string) ([]byte, error) {
		if p != path {
			return nil, fmt.Errorf("loadBytes: read of %q, want %q", p, path)
		}
		return data, nil
	})
}

// heapAllocs returns the bytes allocated on the heap so far. Unlike
// runtime.ReadMemStats it does not stop the world; it misses what sits in
// the per-P caches not yet handed back (well under a MiB), which is noise
// against fuzzAllocLimit.
func heapAllocs(sample []metrics.Sample) uint64 {
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// checkLoad is FuzzLoad's check of one input.
func checkLoad(tb testing.TB, yaml []byte, environ string) {
	tb.Helper()
	var env []string
	if environ != "" {
		env = strings.Split(environ, "\n")
	}
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	before := heapAllocs(sample)
	cfg, err := loadBytes(fuzzFile, yaml, env)
	if n := heapAllocs(sample) - before; len(yaml)+len(environ) <= 4096 && n > fuzzAllocLimit {
		tb.Fatalf("Load of %d bytes allocated %d bytes", len(yaml)+len(environ), n)
	}
	if err != nil {
		if !reflect.DeepEqual(cfg, Config{}) {
			tb.Fatalf("Load returned a Config with the error %v", err)
		}
		for _, e := range leafErrors(err) {
			if problem := loadErrorProblem(e, fuzzFile); problem != "" {
				tb.Fatalf("%s: %T %q", problem, e, e.Error())
			}
		}
		return
	}
	if err := cfg.ValidateWithModels(deployModels); err != nil {
		tb.Fatalf("Load accepted a Config that does not validate: %v", err)
	}
	out, err := cfg.YAML()
	if err != nil {
		tb.Fatalf("YAML of a loaded Config: %v", err)
	}
	again, err := loadBytes(fuzzPrinted, out, nil)
	if err != nil {
		tb.Fatalf("the printed configuration does not load: %v\n%s", err, out)
	}
	// Compared as printed: an empty list may come back nil or empty.
	if got, want := fmt.Sprintf("%+v", again), fmt.Sprintf("%+v", cfg); got != want {
		tb.Fatalf("the printed configuration loads differently:\n got %s\nwant %s\n%s", got, want, out)
	}
	if out2, err := again.YAML(); err != nil || string(out2) != string(out) {
		tb.Fatalf("printing the reloaded configuration: %v\n%s\nwant\n%s", err, out2, out)
	}
}

// fuzzSeedFiles are the configuration files the repository ships.
func fuzzSeedFiles(tb testing.TB) []string {
	tb.Helper()
	paths := []string{"testdata/example.yaml", "testdata/print-config.golden.yaml"}
	more, err := filepath.Glob("../../deploy/examples/*.yaml")
	if err != nil {
		tb.Fatal(err)
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

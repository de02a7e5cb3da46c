package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/spf13/pflag"
)

// testModels stands in for the simulator's model list.
var testModels = []string{"EK1100", "EK1110", "EL1014", "EL2004", "EL4132"}

// loadCase describes the inputs of one Load call. file, if not empty, is
// written to a temporary directory and passed as Sources.File unless
// fileVia says otherwise; "$DIR" in any input is replaced by that directory.
type loadCase struct {
	file    string
	fileVia string // "" (Sources.File), "flag", "env" or "none"
	env     []string
	args    []string
	extra   map[string]string // more files to create in $DIR: name → content
}

// loadResult is what one loadCase produced.
type loadResult struct {
	cfg  Config
	err  error
	path string // the YAML file, "" if none was written
	dir  string // the temporary directory ($DIR)
}

func (lc loadCase) load(t *testing.T) loadResult {
	t.Helper()
	return lc.loadWith(t, testModels)
}

// loadWith is load with the simulator's models given.
func (lc loadCase) loadWith(t *testing.T, models []string) loadResult {
	t.Helper()
	dir := t.TempDir()
	subst := func(s string) string { return strings.ReplaceAll(s, "$DIR", dir) }
	for name, content := range lc.extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := Sources{Models: models}
	path := ""
	if lc.file != "" {
		path = filepath.Join(dir, "ecagent.yaml")
		if err := os.WriteFile(path, []byte(subst(lc.file)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, kv := range lc.env {
		src.Environ = append(src.Environ, subst(kv))
	}
	args := make([]string, len(lc.args))
	for i, a := range lc.args {
		args[i] = subst(a)
	}
	switch lc.fileVia {
	case "":
		src.File = path
	case "flag":
		args = append(args, "--config", path)
	case "env":
		src.Environ = append(src.Environ, EnvConfigFile+"="+path)
	}
	fset := pflag.NewFlagSet("test", pflag.ContinueOnError)
	RegisterFlags(fset)
	fset.Bool("print-config", false, "a flag of the caller's own")
	if err := fset.Parse(args); err != nil {
		t.Fatalf("parse %v: %v", args, err)
	}
	src.Flags = fset
	cfg, err := Load(src)
	return loadResult{cfg: cfg, err: err, path: path, dir: dir}
}

func TestLoadLayers(t *testing.T) {
	t.Parallel()
	def := Default()
	with := func(change func(*Config)) Config {
		c := Default()
		change(&c)
		return c
	}
	tests := []struct {
		name string
		in   loadCase
		want Config
	}{
		{"defaults only", loadCase{}, def},
		{"unrelated flags and variables are ignored", loadCase{
			env:  []string{"PATH=/bin", "ECAGENT_PORT=tcp://10.0.0.1:9781", "ECAGENT_SERVICE_HOST=10.0.0.1", "ECAGENT_TEST_NIC=eth9", "NOEQUALS"},
			args: []string{"--print-config"},
		}, def},
		{"YAML overrides defaults", loadCase{file: "cycle:\n  period: 500us\nsite: plant-a\n"},
			with(func(c *Config) { c.Cycle.Period = contract.Duration(500 * time.Microsecond); c.Site = "plant-a" })},
		{"environment overrides YAML", loadCase{
			file: "cycle:\n  period: 500us\n  priority: 70\n",
			env:  []string{"ECAGENT_CYCLE_PERIOD=250us"},
		}, with(func(c *Config) { c.Cycle.Period = contract.Duration(250 * time.Microsecond); c.Cycle.Priority = 70 })},
		{"flags override environment", loadCase{
			file: "cycle:\n  period: 500us\n",
			env:  []string{"ECAGENT_CYCLE_PERIOD=250us", "ECAGENT_BUS_INTERFACE=eth1"},
			args: []string{"--cycle.period=2ms"},
		}, with(func(c *Config) { c.Cycle.Period = contract.Duration(2 * time.Millisecond); c.Bus.Interface = "eth1" })},
		{"a flag left at its default does not override the file or environment", loadCase{
			file: "cycle:\n  period: 500us\n",
			env:  []string{"ECAGENT_CYCLE_PRIORITY=10"},
			args: []string{"--log.level=debug"},
		}, with(func(c *Config) {
			c.Cycle.Period = contract.Duration(500 * time.Microsecond)
			c.Cycle.Priority = 10
			c.Log.Level = "debug"
		})},
		{"every kind from the environment", loadCase{env: []string{
			"ECAGENT_SITE=s1", "ECAGENT_BUS_EXPECTEDSLAVES=3", "ECAGENT_CYCLE_LOCKMEMORY=false",
			"ECAGENT_STATUS_INTERVAL=0", "ECAGENT_BUS_DEVICES=EK1100, EL2004,EK1110",
		}}, with(func(c *Config) {
			c.Site, c.Bus.ExpectedSlaves, c.Cycle.LockMemory, c.Status.Interval = "s1", 3, false, 0
			c.Bus.Devices = []string{"EK1100", "EL2004", "EK1110"}
		})},
		{"every kind from flags", loadCase{args: []string{
			"--line=l2", "--cycle.core=0", "--cycle.lockmemory=false", "--cycle.busywait=100us",
			"--bus.devices=EK1100,EL1014", "--bus.devices=EK1110", "--metrics.listen=",
		}}, with(func(c *Config) {
			c.Line, c.Cycle.Core, c.Cycle.LockMemory, c.Cycle.BusyWait = "l2", 0, false, contract.Duration(100*time.Microsecond)
			c.Bus.Devices = []string{"EK1100", "EL1014", "EK1110"}
			c.Metrics.Listen = ""
		})},
		{"file named by --config", loadCase{file: "line: l9\n", fileVia: "flag"},
			with(func(c *Config) { c.Line = "l9" })},
		{"file named by ECAGENT_CONFIG", loadCase{file: "line: l8\n", fileVia: "env"},
			with(func(c *Config) { c.Line = "l8" })},
		{"--config wins over ECAGENT_CONFIG", loadCase{
			file: "line: l7\n", fileVia: "flag",
			env: []string{EnvConfigFile + "=$DIR/does-not-exist.yaml"},
		}, with(func(c *Config) { c.Line = "l7" })},
		{"YAML null and empty sections leave defaults", loadCase{file: "cycle:\n  period:\nbus: {}\nlog:\n"}, def},
		{"empty file", loadCase{file: "# nothing\n"}, def},
		{"unquoted number as a label, zero as a duration", loadCase{file: "line: 3\ncycle:\n  busywait: 0\n"},
			with(func(c *Config) { c.Line = "3" })},
		{"log level and format are case-insensitive", loadCase{env: []string{"ECAGENT_LOG_LEVEL=WARN", "ECAGENT_LOG_FORMAT=Json"}},
			with(func(c *Config) { c.Log.Level, c.Log.Format = "warn", "json" })},
		{"an SII image that exists", loadCase{
			file:  "bus:\n  devices: [EK1100, $DIR/el2828.bin]\n",
			extra: map[string]string{"el2828.bin": "\x00\x01"},
		}, Config{}}, // checked below: path depends on the temp dir
		{"devices are not checked when a real interface is used", loadCase{
			file: "bus:\n  interface: eth1\n  devices: [NOPE, missing.bin]\n",
		}, with(func(c *Config) { c.Bus.Interface = "eth1"; c.Bus.Devices = []string{"NOPE", "missing.bin"} })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.in.load(t)
			got, err := r.cfg, r.err
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if tt.name == "an SII image that exists" {
				if len(got.Bus.Devices) != 2 || !strings.HasSuffix(got.Bus.Devices[1], "/el2828.bin") {
					t.Fatalf("devices = %q", got.Bus.Devices)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Load:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   loadCase
		// want must all appear in the error text; "$FILE" is the YAML path.
		want []string
	}{
		{"period out of range", loadCase{file: "cycle:\n  period: 10us\n"},
			[]string{`config: cycle.period = "10us" ($FILE:2): must be between 50us and 1s`}},
		{"priority 120", loadCase{file: "cycle:\n  priority: 120\n"},
			[]string{`cycle.priority = "120"`, "between 1 and 99"}},
		{"core 99", loadCase{file: "cycle:\n  core: 99\n"},
			[]string{`cycle.core = "99"`, "-1 (no pinning) or an online CPU"}},
		{"busywait equal to the period", loadCase{file: "cycle:\n  period: 1ms\n  busywait: 1ms\n"},
			[]string{`cycle.busywait = "1ms" ($FILE:3)`, "less than cycle.period (1ms)"}},
		{"unknown model", loadCase{file: "bus:\n  devices: [EK1100, EL9999]\n"},
			[]string{`bus.devices[1] = "EL9999"`, "unknown model", "EK1100, EK1110"}},
		{"model in the wrong case", loadCase{file: "bus:\n  devices: [el2004]\n"},
			[]string{`bus.devices[0] = "el2004"`, `did you mean "EL2004"`}},
		{"empty device list on the simulated segment", loadCase{file: "bus:\n  devices: []\n"},
			[]string{`bus.devices = ""`, "at least one device"}},
		{"missing SII image", loadCase{file: "bus:\n  devices: [EK1100, $DIR/nope.bin]\n"},
			[]string{`bus.devices[1] = "`, "nope.bin", "cannot use the SII image: no such file or directory"}},
		{"missing ESI file", loadCase{file: "bus:\n  devices: [EK1100, \"$DIR/acme.xml:AI2@#x10\"]\n"},
			[]string{`bus.devices[1] = "`, "acme.xml:AI2@#x10", "cannot use the ESI file: no such file or directory"}},
		{"missing ESI directory", loadCase{file: "bus:\n  esi: [$DIR/esi]\n"},
			[]string{`bus.esi[0] = "`, "cannot read the ESI directory or file: no such file or directory"}},
		{"unknown key", loadCase{file: "cycle:\n  period: 1ms\n  perod: 2ms\n"},
			[]string{`config: unknown key "cycle.perod" ($FILE:3); did you mean "cycle.period"?`}},
		{"unknown key in the wrong section", loadCase{file: "bus:\n  period: 2ms\n"},
			[]string{`unknown key "bus.period"`, `did you mean "cycle.period"?`}},
		{"unknown key with an underscore", loadCase{file: "bus:\n  expected_slaves: 2\n"},
			[]string{`unknown key "bus.expected_slaves"`, `did you mean "bus.expectedslaves"?`}},
		{"unknown top-level key", loadCase{file: "modbus:\n  broker: x\n"},
			[]string{`unknown key "modbus.broker" ($FILE:2)`}},
		{"section given a value", loadCase{file: "cycle: 5\n"},
			[]string{`unknown key "cycle" ($FILE:1)`, "cycle is a section", "cycle.period"}},
		{"mapping given for a value", loadCase{file: "cycle:\n  period:\n    ms: 1\n    us: 2\n"},
			[]string{`cycle.period = "{…}"`, "not a mapping"}},
		{"bad YAML", loadCase{file: "cycle:\n  period: 1ms\n   core: 2\n"},
			[]string{"config: file $FILE: yaml: line 3:"}},
		{"duplicate YAML key", loadCase{file: "site: a\nsite: b\n"},
			[]string{"config: file $FILE:", "line 2", `"site" already defined`}},
		{"YAML that is not a mapping", loadCase{file: "- a\n- b\n"},
			[]string{"config: file $FILE:", "line 1"}},
		{"missing config file", loadCase{fileVia: "none", env: []string{EnvConfigFile + "=$DIR/none.yaml"}},
			[]string{"config: file $DIR/none.yaml: no such file or directory"}},
		{"bad duration", loadCase{file: "cycle:\n  period: fast\n"},
			[]string{`cycle.period = "fast" ($FILE:2): must be a duration with a unit`}},
		{"duration without a unit", loadCase{file: "bus:\n  timeout: 5\n"},
			[]string{`bus.timeout = "5"`, "a bare number has no unit"}},
		{"bad log level", loadCase{file: "log:\n  level: verbose\n"},
			[]string{`log.level = "verbose" ($FILE:2): must be debug, info, warn or error`}},
		{"bad log format from a flag", loadCase{args: []string{"--log.format=xml"}},
			[]string{`log.format = "xml" (--log.format): must be text or json`}},
		{"bad value from the environment names the variable", loadCase{env: []string{"ECAGENT_CYCLE_PRIORITY=120"}},
			[]string{`cycle.priority = "120" (ECAGENT_CYCLE_PRIORITY)`}},
		{"malformed integer from the environment", loadCase{env: []string{"ECAGENT_CYCLE_CORE=two"}},
			[]string{`cycle.core = "two" (ECAGENT_CYCLE_CORE): must be an integer`}},
		{"malformed bool from the environment", loadCase{env: []string{"ECAGENT_CYCLE_LOCKMEMORY=maybe"}},
			[]string{`cycle.lockmemory = "maybe" (ECAGENT_CYCLE_LOCKMEMORY): must be true or false`}},
		{"misspelt variable inside a section", loadCase{env: []string{"ECAGENT_CYCLE_PEROID=1ms"}},
			[]string{`unknown key "cycle.peroid" (ECAGENT_CYCLE_PEROID); did you mean "cycle.period"?`}},
		{"variable naming a section", loadCase{env: []string{"ECAGENT_LOG=debug"}},
			[]string{`unknown key "log" (ECAGENT_LOG)`, "log.level, log.format"}},
		{"bad listen address", loadCase{file: "metrics:\n  listen: 9781\n"},
			[]string{`metrics.listen = "9781"`, "host:port"}},
		{"missing web config", loadCase{file: "metrics:\n  webconfig: $DIR/web.yml\n"},
			[]string{`metrics.webconfig = "$DIR/web.yml"`, "no such file or directory"}},
		{"missing cycle program", loadCase{env: []string{"ECAGENT_CYCLE_PROGRAM=$DIR/ecagent-cycle"}},
			[]string{`cycle.program = "$DIR/ecagent-cycle" (ECAGENT_CYCLE_PROGRAM): cannot use the cycle program`, "no such file or directory"}},
		{"cycle program not executable", loadCase{args: []string{"--cycle.program=$DIR/cycle"}, extra: map[string]string{"cycle": "#!/bin/sh\n"}},
			[]string{`cycle.program = "$DIR/cycle" (--cycle.program): cannot use the cycle program: not executable`}},
		{"label with a slash", loadCase{file: "site: a/b\n"},
			[]string{`site = "a/b" ($FILE:1)`, "MQTT topic level"}},
		{"a bad value overridden by a good one is not reported, the others are", loadCase{
			file: "cycle:\n  period: 10us\n  priority: 120\nlog:\n  level: loud\n",
			args: []string{"--cycle.period=1ms"},
		}, []string{`cycle.priority = "120"`, `log.level = "loud"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tt.in.load(t)
			if r.err == nil {
				t.Fatalf("Load succeeded, want an error; got %+v", r.cfg)
			}
			if !reflect.DeepEqual(r.cfg, Config{}) {
				t.Errorf("Load returned a non-zero Config with an error")
			}
			msg := r.err.Error()
			for _, w := range tt.want {
				w = strings.ReplaceAll(strings.ReplaceAll(w, "$FILE", r.path), "$DIR", r.dir)
				if !strings.Contains(msg, w) {
					t.Errorf("error lacks %q:\n%s", w, msg)
				}
			}
		})
	}
}

func TestLoadReportsEveryProblem(t *testing.T) {
	t.Parallel()
	err := loadCase{
		file: "cycle:\n  period: 10us\n  priority: 120\n  core: 99\n  perod: 1\nlog:\n  level: loud\n",
		env:  []string{"ECAGENT_BUS_TIMEOUT=soon"},
	}.load(t).err
	if err == nil {
		t.Fatal("Load succeeded")
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("error %T is not joined", err)
	}
	var fields, unknown int
	for _, e := range joined.Unwrap() {
		var fe *FieldError
		var ue *UnknownKeyError
		switch {
		case errors.As(e, &fe):
			fields++
		case errors.As(e, &ue):
			unknown++
		default:
			t.Errorf("untyped error %v", e)
		}
	}
	// period, priority, core, log.level, bus.timeout; cycle.perod.
	if fields != 5 || unknown != 1 {
		t.Errorf("got %d field and %d unknown-key errors, want 5 and 1:\n%v", fields, unknown, err)
	}
}

func TestLoadMissingFileIsNotExist(t *testing.T) {
	t.Parallel()
	_, err := Load(Sources{File: filepath.Join(t.TempDir(), "absent.yaml")})
	var fe *FileError
	if !errors.As(err, &fe) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want a *FileError wrapping fs.ErrNotExist", err)
	}
}

// TestGoldenExample loads testdata/example.yaml, which sets every key,
// and compares what it reads with testdata/example.golden.yaml (go test
// -update rewrites it: read the difference).
func TestGoldenExample(t *testing.T) {
	t.Parallel()
	got, err := Load(Sources{File: "testdata/example.yaml", Models: testModels})
	if err != nil {
		t.Fatal(err)
	}
	out, err := got.YAML()
	if err != nil {
		t.Fatal(err)
	}
	testsupport.Golden(t, "testdata/example.golden.yaml", out)
	// The example must exercise every key: no field may keep its default.
	def := Default()
	s := newSchema()
	for _, f := range s.fields {
		if reflect.DeepEqual(f.get(&got), f.get(&def)) && f.key != "bus.interface" {
			t.Errorf("example.yaml leaves %s at its default", f.key)
		}
	}
}

// TestDeployExample keeps deploy/examples/ecagent.yaml loadable and
// complete.
func TestDeployExample(t *testing.T) {
	t.Parallel()
	const path = "../../deploy/examples/ecagent.yaml"
	got, err := Load(Sources{File: path, Models: testModels})
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the example no longer shows the defaults:\n got %+v\nwant %+v", got, want)
	}
	// Every key must be documented in the example; host only as a
	// comment, because its default (the OS host name) cannot be written
	// down.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, key := range newSchema().keys() {
		segments := strings.Split(key, ".")
		needle := segments[len(segments)-1] + ":"
		if key == "host" {
			needle = "# host:"
		}
		if !strings.Contains(text, needle) {
			t.Errorf("example lacks %s (%q)", key, needle)
		}
	}
}

// deployModels are the simulator's models the deploy examples use.
var deployModels = append(slices.Clone(testModels), "AKD")

// TestDeployExamples loads every file in deploy/examples and checks what
// the servo examples promise.
func TestDeployExamples(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("../../deploy/examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]func(Config) string{
		"ecagent.yaml": func(c Config) string { return "" },
		"servo-csv-1ms.yaml": func(c Config) string {
			d := c.Drives
			if c.Cycle.Period != contract.Duration(time.Millisecond) || !c.Bus.DC.Enabled || len(d) != 1 || d[0].Slave != 1 ||
				d[0].Mode != "csv" || d[0].Target.Kind != "sine" || !slices.Equal(c.Bus.Devices, []string{"EK1100", "AKD"}) {
				return fmt.Sprintf("not a 1 ms CSV sine on [EK1100, AKD] with DC: %+v", c)
			}
			return ""
		},
		"servo-cst-125us.yaml": func(c Config) string {
			d := c.Drives
			if c.Cycle.Period != contract.Duration(125*time.Microsecond) || !c.Bus.DC.Enabled || len(d) != 1 || d[0].Slave != 1 ||
				d[0].Mode != "cst" || !slices.Equal(c.Bus.Devices, []string{"EK1100", "AKD"}) {
				return fmt.Sprintf("not a 125 us CST drive on [EK1100, AKD] with DC: %+v", c)
			}
			return ""
		},
	}
	seen := 0
	for _, path := range paths {
		name := filepath.Base(path)
		check, known := want[name]
		if !known {
			check = func(Config) string { return "" } // new examples must at least load
		} else {
			seen++
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(Sources{File: path, Models: deployModels})
			if err != nil {
				t.Fatal(err)
			}
			if problem := check(cfg); problem != "" {
				t.Error(problem)
			}
		})
	}
	if seen != len(want) {
		t.Errorf("found %d of the %d expected examples in %v", seen, len(want), paths)
	}
}

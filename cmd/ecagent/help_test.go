package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/sim"
)

// helpOf runs `ecagent args... --help` and returns its output and the
// flag set the command parsed.
func helpOf(t *testing.T, args ...string) (string, *pflag.FlagSet) {
	t.Helper()
	var out, errOut bytes.Buffer
	var fs *pflag.FlagSet
	e := &env{stdout: &out, stderr: &errOut, flagSets: func(f *pflag.FlagSet) { fs = f }}
	if code := dispatch(context.Background(), e, append(args, "--help")); code != exitOK {
		t.Fatalf("%s --help: exit %d: %s", strings.Join(args, " "), code, errOut.String())
	}
	if fs == nil {
		t.Fatalf("%s --help made no flag set", strings.Join(args, " "))
	}
	return out.String(), fs
}

// flagToken finds the flags a help text names.
var flagToken = regexp.MustCompile(`(?:^|[\s\[(|'])--([a-z][a-z0-9.-]*)`)

func TestEveryHelpFitsAScreen(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			out, fs := helpOf(t, c.name)
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if len(lines) > 40 {
				t.Errorf("%d lines, want at most 40:\n%s", len(lines), out)
			}
			for i, l := range lines {
				if n := utf8.RuneCountInString(l); n > helpWidth {
					t.Errorf("line %d is %d columns wide, want at most %d: %q", i+1, n, helpWidth, l)
				}
			}
			for _, want := range []string{"Usage: ecagent " + c.name, "Example"} {
				if !strings.Contains(out, want) {
					t.Errorf("no %q in:\n%s", want, out)
				}
			}
			for _, m := range flagToken.FindAllStringSubmatch(out, -1) {
				if fs.Lookup(m[1]) == nil {
					t.Errorf("help names --%s, which %s does not accept", m[1], c.name)
				}
			}
		})
	}
}

// TestCommandFlags checks that each command takes the configuration flags
// of the keys it reads, and no others.
func TestCommandFlags(t *testing.T) {
	tests := []struct {
		command string
		want    []string // flags it must accept
		not     []string // flags it must not accept
	}{
		{"run", []string{"config", "print-config", "cycle.period", "mqtt.broker", "otlp.endpoint", "status.interval", "site"}, nil},
		{"rtcheck", []string{"config", "json", "strict", "cycle.core", "cycle.priority", "bus.interface"},
			[]string{"mqtt.broker", "otlp.endpoint", "metrics.listen", "cycle.period", "status.interval"}},
		{"bench", []string{"config", "cycles", "duration", "cycle.period", "cycle.shm", "bus.devices", "bus.dc.enabled",
			"log.level", "site", "host", "metrics.window"},
			[]string{"mqtt.broker", "otlp.endpoint", "metrics.listen", "status.interval"}},
		{"sim", []string{"iface", "devices", "control", "faults", "help-faults"}, []string{"mqtt.broker", "cycle.period"}},
		{"scan", []string{"iface", "devices", "expected-slaves"}, []string{"mqtt.broker", "cycle.period"}},
		{"config", []string{"json"}, []string{"mqtt.broker", "cycle.period"}},
	}
	for _, tt := range tests {
		_, fs := helpOf(t, tt.command)
		for _, f := range tt.want {
			if fs.Lookup(f) == nil {
				t.Errorf("%s does not accept --%s", tt.command, f)
			}
		}
		for _, f := range tt.not {
			if fs.Lookup(f) != nil {
				t.Errorf("%s accepts --%s, which it does not read", tt.command, f)
			}
		}
	}
	if out, _ := helpOf(t, "rtcheck"); strings.Contains(out, "mqtt.") {
		t.Errorf("rtcheck --help mentions mqtt:\n%s", out)
	}
}

func TestSimHelpFaults(t *testing.T) {
	code, out, errOut := runCLI(t, context.Background(), nil, "sim", "--help-faults")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{"--control", "--faults", "disappear POS", "repeat 10s", "socat"} {
		if !strings.Contains(out, s) {
			t.Errorf("sim --help-faults does not mention %q", s)
		}
	}
}

func TestConfigSchemaJSON(t *testing.T) {
	code, out, errOut := runCLI(t, context.Background(), nil, "config", "schema", "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got config.Description
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("config schema --json: %v\n%s", err, out)
	}
	keys := map[string]config.KeyInfo{}
	for _, k := range got.Keys {
		keys[k.Key] = k
	}
	// Every key the loader knows: each one a flag of run registers, and
	// the file-only lists.
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	config.RegisterFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == config.FlagConfigFile {
			return
		}
		k, ok := keys[f.Name]
		switch {
		case !ok:
			t.Errorf("schema lacks %s", f.Name)
		case k.Flag != "--"+f.Name || k.Env != config.EnvName(f.Name) || k.Description == "":
			t.Errorf("schema of %s: %+v", f.Name, k)
		}
	})
	for _, key := range []string{"drives", "drives[].target.kind", "bus.pdo", "bus.pdo[].rxpdos[].entries"} {
		if k, ok := keys[key]; !ok || !k.FileOnly {
			t.Errorf("schema of file-only %s: %+v (found %v)", key, k, ok)
		}
	}
	if k := keys["cycle.period"]; k.Type != "duration" || k.Default != "1ms" || !strings.Contains(k.Allowed, "50us and 1s") {
		t.Errorf("cycle.period: %+v", k)
	}
	if k := keys["bus.devices"]; !strings.Contains(k.Allowed, strings.Join(sim.Models(), ", ")) {
		t.Errorf("bus.devices does not list the simulator's models: %+v", k)
	}
}

func TestConfigSchemaText(t *testing.T) {
	code, out, _ := runCLI(t, context.Background(), nil, "config", "schema")
	for _, want := range []string{"cycle.period  duration  default: 1ms", "env ECAGENT_CYCLE_PERIOD, flag --cycle.period",
		"bus.pdo[].rxpdos[].index  uint16", "(file only)", "[mqtt] "} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("exit %d; config schema lacks %q", code, want)
		}
	}
}

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		t.Helper()
		path := dir + "/" + name
		if err := writeFile(path, text); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.yaml", "cycle:\n  period: 250us\ndrives:\n  - slave: 1\n    mode: csv\n    target: {kind: constant, value: 100}\n")
	bad := write("bad.yaml", "cycle:\n  period: 10us\n  perod: 1ms\n")
	tests := []struct {
		name    string
		args    []string
		environ []string
		code    int
		stdout  string
		stderr  []string
	}{
		{"valid", []string{"config", "check", good}, nil, exitOK, good + ": valid", nil},
		{"invalid", []string{"config", "check", bad}, nil, exitUsage, "",
			[]string{`cycle.period = "10us" (` + bad + `:2): must be between 50us and 1s`, `unknown key "cycle.perod" (` + bad + `:3); did you mean "cycle.period"?`}},
		{"environment ignored", []string{"config", "check", good}, []string{"ECAGENT_CYCLE_PRIORITY=120"}, exitOK, "valid", nil},
		{"missing file", []string{"config", "check", dir + "/none.yaml"}, nil, exitUsage, "", []string{"none.yaml"}},
		{"no file", []string{"config", "check"}, nil, exitUsage, "", []string{"want one FILE"}},
		{"no subcommand", []string{"config"}, nil, exitUsage, "", []string{"schema or check"}},
		{"unknown subcommand", []string{"config", "lint"}, nil, exitUsage, "", []string{`unknown subcommand "lint"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, context.Background(), tt.environ, tt.args...)
			if code != tt.code || !strings.Contains(out, tt.stdout) {
				t.Errorf("exit %d (want %d), stdout %q (want %q), stderr %s", code, tt.code, out, tt.stdout, errOut)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q lacks %q", errOut, want)
				}
			}
		})
	}
}

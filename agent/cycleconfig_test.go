package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/sim"
)

// TestCycleConfigDefaults: a key the cycle's file leaves out takes the
// agent's default for it.
// The default segment is the built-in simulated one, whose frames get
// simulatedFrameTimeout at least; on an interface bus.timeout is kept.
func TestCycleConfigDefaults(t *testing.T) {
	want := process.Default()
	want.Bus.Timeout = process.Duration(simulatedFrameTimeout)
	if got := CycleConfig(config.Default()); !reflect.DeepEqual(got, want) {
		t.Errorf("the agent's defaults as the cycle's:\n%+v\nthe cycle's own:\n%+v", got, want)
	}
	cfg := config.Default()
	cfg.Bus.Interface = "eth1"
	want = process.Default()
	want.Bus.Interface = "eth1"
	if got := CycleConfig(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("on an interface:\n%+v\nthe cycle's own:\n%+v", got, want)
	}
}

// TestCycleConfigBounds: the cycle checks its keys against the agent's
// bounds, so that a configuration the agent accepts never stops the cycle.
func TestCycleConfigBounds(t *testing.T) {
	for _, b := range []struct {
		name        string
		agent, prog any
	}{
		{"MinPeriod", config.MinPeriod, process.MinPeriod},
		{"MaxPeriod", config.MaxPeriod, process.MaxPeriod},
		{"MaxPriority", config.MaxPriority, process.MaxPriority},
		{"MinBusTimeout", config.MinBusTimeout, process.MinBusTimeout},
		{"MaxBusTimeout", config.MaxBusTimeout, process.MaxBusTimeout},
		{"MinStateTimeout", config.MinStateTimeout, process.MinStateTimeout},
		{"MaxStateTimeout", config.MaxStateTimeout, process.MaxStateTimeout},
		{"MaxSlaves", config.MaxSlaves, process.MaxSlaves},
		{"DefaultAlarmCycles", config.DefaultAlarmCycles, process.DefaultAlarmCycles},
		{"MaxAlarmCycles", config.MaxAlarmCycles, process.MaxAlarmCycles},
		{"DefaultDCDriftFrames", config.DefaultDCDriftFrames, process.DefaultDCDriftFrames},
		{"DefaultDCStartDelay", config.DefaultDCStartDelay, process.DefaultDCStartDelay},
		{"MaxDCDriftFrames", config.MaxDCDriftFrames, process.MaxDCDriftFrames},
		{"MinDCStartDelay", config.MinDCStartDelay, process.MinDCStartDelay},
		{"MaxDCStartDelay", config.MaxDCStartDelay, process.MaxDCStartDelay},
		{"MaxSettleCycles", config.MaxSettleCycles, process.MaxSettleCycles},
		{"MaxRingPosition", config.MaxRingPosition, process.MaxRingPosition},
		{"MaxPDOEntries", config.MaxPDOEntries, process.MaxPDOEntries},
		{"FirstRxPDO", config.FirstRxPDO, process.FirstRxPDO},
		{"LastRxPDO", config.LastRxPDO, process.LastRxPDO},
		{"FirstTxPDO", config.FirstTxPDO, process.FirstTxPDO},
		{"LastTxPDO", config.LastTxPDO, process.LastTxPDO},
		{"DefaultSHM", config.DefaultSHM, process.DefaultSHM},
	} {
		if reflect.ValueOf(b.agent).Convert(reflect.TypeOf(b.prog)).Interface() != b.prog {
			t.Errorf("%s: the agent's is %v, the cycle's %v", b.name, b.agent, b.prog)
		}
	}
}

// TestCycleConfigOfExamples: every example configuration gives the cycle
// a file it accepts, and reads back what the agent meant.
func TestCycleConfigOfExamples(t *testing.T) {
	paths, err := filepath.Glob("../deploy/examples/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, path := range paths {
		cfg, err := config.Load(config.Sources{File: path, Models: sim.Models()})
		if err != nil {
			t.Fatal(err)
		}
		c := CycleConfig(cfg)
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := process.Parse(b)
		if err != nil {
			t.Errorf("%s: the cycle refuses the agent's configuration: %v\n%s", path, err, b)
			continue
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%s: the cycle reads\n%+v\nthe agent wrote\n%+v", path, got, c)
		}
		if len(cfg.Drives) != len(got.Drives) || len(cfg.Bus.PDO) != len(got.Bus.PDO) ||
			time.Duration(got.Cycle.Period) != cfg.Cycle.Period {
			t.Errorf("%s: drives, PDOs or period lost: %+v", path, got)
		}
	}
}

// TestCycleConfigMapsEveryKey fills every key the cycle reads with a value
// other than its default and checks that it arrives.
func TestCycleConfigMapsEveryKey(t *testing.T) {
	cfg := config.Default()
	cfg.Bus = config.Bus{Interface: "eth7", ExpectedSlaves: 4, Timeout: 3 * time.Millisecond, StateTimeout: 2 * time.Second,
		AlarmCycles: 3, DC: config.DC{Enabled: true, Sync0Shift: 10 * time.Microsecond, Sync1: 20 * time.Microsecond,
			DriftFrames: 7, StartDelay: 30 * time.Millisecond},
		PDO: []config.SlavePDOs{{Slave: 2, RxPDOs: []config.PDO{{Index: 0x1601, Entries: []config.PDOEntry{{Index: 0x6040, SubIndex: 1, Bits: 16}}}},
			TxPDOs: []config.PDO{}}}}
	cfg.Cycle = config.Cycle{Period: 500 * time.Microsecond, Core: 2, Priority: 70, BusyWait: 5 * time.Microsecond,
		RecvSpin: 7 * time.Microsecond, SHM: "/run/x.shm", Program: "/opt/x"}
	cfg.Log = config.Log{Level: "debug", Format: "json"}
	cfg.Drives = []config.Drive{{Slave: 2, Mode: "csv", FaultReset: "auto", SettleCycles: 3,
		Target: config.Target{Kind: "ramp", Value: 1, From: 2, To: 3, Duration: time.Second, Offset: 4, Amplitude: 5, Period: time.Minute}}}
	want := process.Config{
		Bus: process.Bus{Interface: "eth7", ExpectedSlaves: 4, Timeout: process.Duration(3 * time.Millisecond),
			StateTimeout: process.Duration(2 * time.Second), AlarmCycles: 3,
			DC: process.DC{Enabled: true, Sync0Shift: process.Duration(10 * time.Microsecond), Sync1: process.Duration(20 * time.Microsecond),
				DriftFrames: 7, StartDelay: process.Duration(30 * time.Millisecond)},
			PDO: []process.SlavePDOs{{Slave: 2, RxPDOs: []process.PDO{{Index: 0x1601, Entries: []process.PDOEntry{{Index: 0x6040, SubIndex: 1, Bits: 16}}}},
				TxPDOs: []process.PDO{}}}},
		Cycle: process.Cycle{Period: process.Duration(500 * time.Microsecond), Core: 2, Priority: 70,
			BusyWait: process.Duration(5 * time.Microsecond), RecvSpin: process.Duration(7 * time.Microsecond), SHM: "/run/x.shm"},
		Log: process.Log{Level: "debug", Format: "json"},
		Drives: []process.Drive{{Slave: 2, Mode: "csv", FaultReset: "auto", SettleCycles: 3,
			Target: process.Target{Kind: "ramp", Value: 1, From: 2, To: 3, Duration: process.Duration(time.Second), Offset: 4, Amplitude: 5,
				Period: process.Duration(time.Minute)}}},
	}
	if got := CycleConfig(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestIsCycleCommand(t *testing.T) {
	const seg = "/dev/shm/a.shm"
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"/usr/local/bin/ecagent-cycle", "--config", "/dev/shm/a.shm.cycle.json"}, true},
		{[]string{"/opt/cycle", "--config", "/dev/shm/a.shm.cycle.json", "--link-fd", "3", "--cycles", "9"}, true},
		{[]string{"/usr/local/bin/ecagent", "cycle", "--config", "/dev/shm/a.shm.yaml"}, true}, // before ecagent-cycle
		{[]string{"/usr/local/bin/ecagent-cycle", "--config", "/dev/shm/b.shm.cycle.json"}, false},
		{[]string{"/usr/local/bin/ecagent", "run"}, false},
		{[]string{"sleep", "10"}, false},
		{[]string{""}, false},
	} {
		if got := isCycleCommand(c.args, seg); got != c.want {
			t.Errorf("isCycleCommand(%q) = %v, want %v", c.args, got, c.want)
		}
	}
	if isCycleProcess(os.Getpid(), seg) {
		t.Error("the test process is taken for a cycle process")
	}
}

func TestCycleProgram(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, CycleProgramName)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Cycle.Program = prog
	if got, err := CycleProgram(cfg); err != nil || got != prog {
		t.Errorf("cycle.program %s: %q, %v", prog, got, err)
	}
	cfg.Cycle.Program = filepath.Join(dir, "missing")
	if _, err := CycleProgram(cfg); err == nil || !strings.Contains(err.Error(), "cycle.program") {
		t.Errorf("a missing cycle.program: %v", err)
	}
	// The test binary has no ecagent-cycle beside it: $PATH decides.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(exe), CycleProgramName)); err == nil {
		t.Skip("an ecagent-cycle lies beside the test binary")
	}
	cfg.Cycle.Program = ""
	t.Setenv("PATH", dir)
	if got, err := CycleProgram(cfg); err != nil || got != prog {
		t.Errorf("from $PATH: %q, %v", got, err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := CycleProgram(cfg); err == nil || !strings.Contains(err.Error(), "set cycle.program") {
		t.Errorf("nowhere: %v", err)
	}
	cfg.Cycle.Program = CycleProgramName
	t.Setenv("PATH", dir)
	if got, err := CycleProgram(cfg); err != nil || got != prog {
		t.Errorf("a name in cycle.program: %q, %v", got, err)
	}
}

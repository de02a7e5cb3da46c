package agent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ecagent/ecagent/agent/config"
)

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

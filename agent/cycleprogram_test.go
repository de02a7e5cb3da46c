package agent

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
		{[]string{"/usr/local/bin/ecagent-cycle", "--shm", seg, "--link-fd", "3", "--config-fd", "4", "--report-fd", "5"}, true},
		{[]string{"/tmp/go-build1/b001/exe/ecagent", "cycle", "--shm", seg, "--config-fd", "3"}, true}, // the hidden mode
		{[]string{"/usr/local/bin/ecagent-cycle", "--config", "/dev/shm/a.shm.cycle.json"}, true},
		{[]string{"/opt/cycle", "--config", "/dev/shm/a.shm.cycle.json", "--link-fd", "3", "--cycles", "9"}, true},
		{[]string{"/usr/local/bin/ecagent", "cycle", "--config", "/dev/shm/a.shm.yaml"}, true}, // before ecagent-cycle
		{[]string{"/usr/local/bin/ecagent-cycle", "--config", "/dev/shm/b.shm.cycle.json"}, false},
		{[]string{"/usr/local/bin/ecagent", "cycle", "--shm", "/dev/shm/b.shm", "--config-fd", "3"}, false}, // another agent's
		{[]string{"/usr/local/bin/ecagent", "cycle", "--config", "/dev/shm/b.shm.yaml"}, false},
		{[]string{"/usr/local/bin/ecagent", "run"}, false},
		{[]string{"/usr/local/bin/ecagent", "slaves", "--cycle.shm", seg}, false},
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

// TestFindCycleProgram resolves the cycle program from cycle.program,
// beside the executable (the test binary: none there), $PATH and, with
// none of them, the executable's hidden mode, which it says at warn.
func TestFindCycleProgram(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, CycleProgramName)
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	cfg := config.Default()
	cfg.Cycle.Program = prog
	if got, err := FindCycleProgram(cfg, log); err != nil || got.Path != prog || got.Hidden() {
		t.Errorf("cycle.program %s: %+v, %v", prog, got, err)
	}
	cfg.Cycle.Program = filepath.Join(dir, "missing")
	var cpe *CycleProgramError
	if _, err := FindCycleProgram(cfg, log); !errors.As(err, &cpe) || cpe.Program != cfg.Cycle.Program ||
		!strings.Contains(err.Error(), "install it, or leave cycle.program empty") {
		t.Errorf("a missing cycle.program: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(exe), CycleProgramName)); err == nil {
		t.Skip("an ecagent-cycle lies beside the test binary")
	}
	cfg.Cycle.Program = ""
	t.Setenv("PATH", dir)
	if got, err := FindCycleProgram(cfg, log); err != nil || got.Path != prog || got.Hidden() {
		t.Errorf("from $PATH: %+v, %v", got, err)
	}
	if logged.Len() != 0 {
		t.Errorf("logged with a cycle program at hand:\n%s", &logged)
	}
	t.Setenv("PATH", t.TempDir())
	got, err := FindCycleProgram(cfg, log)
	if err != nil || got.Path != exe || !slices.Equal(got.Args, []string{CycleMode}) || !got.Hidden() {
		t.Errorf("nowhere: %+v, %v; want %s %s", got, err, exe, CycleMode)
	}
	if n := strings.Count(logged.String(), "level=WARN"); n != 1 || !strings.Contains(logged.String(), "install ecagent-cycle beside ecagent") {
		t.Errorf("the hidden mode said %d times at warn:\n%s", n, &logged)
	}
	cfg.Cycle.Program = CycleProgramName
	t.Setenv("PATH", dir)
	if got, err := FindCycleProgram(cfg, log); err != nil || got.Path != prog {
		t.Errorf("a name in cycle.program: %+v, %v", got, err)
	}
}

package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/ecagent/ecagent/agent/config"
)

// CycleProgramName is the file name of the cycle program (cmd/ecagent-cycle).
const CycleProgramName = "ecagent-cycle"

// CycleMode is the hidden subcommand of ecagent that runs the cycle
// process (`ecagent cycle`, cmd/ecagent): the same code as ecagent-cycle,
// for when that is not installed.
const CycleMode = "cycle"

// CycleProgram is how the agent starts a cycle process: the program at
// Path, with Args before the cycle's own flags — none for ecagent-cycle,
// CycleMode for the agent's own executable in its hidden mode.
type CycleProgram struct {
	Path string
	Args []string
}

// Hidden reports whether p is the agent's executable in its hidden cycle
// mode.
func (p CycleProgram) Hidden() bool { return len(p.Args) > 0 && p.Args[0] == CycleMode }

// CycleProgramError is an error finding the cycle program. Program is
// cycle.program as configured ("" when it is not set): such an error is
// the configuration's.
type CycleProgramError struct {
	Program string
	Err     error
}

func (e *CycleProgramError) Error() string { return e.Err.Error() }
func (e *CycleProgramError) Unwrap() error { return e.Err }

// FindCycleProgram returns the cycle program the agent starts for cfg:
// cycle.program (a path, or a name looked up in $PATH), else
// ecagent-cycle beside the running executable, else ecagent-cycle in
// $PATH, else the running executable itself in its hidden mode (`ecagent
// cycle`: `go run ./cmd/ecagent run`, a lone binary), which it logs at
// warn. The separate ecagent-cycle stays the first choice: it holds
// nothing of the agent in its memory (test/cycle_closure_test.go).
func FindCycleProgram(cfg config.Config, log *slog.Logger) (CycleProgram, error) {
	if p := cfg.Cycle.Program; p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return CycleProgram{}, &CycleProgramError{Program: p, Err: fmt.Errorf(
				"cycle.program %q: %w: install it, or leave cycle.program empty for %s beside ecagent or in $PATH, else ecagent's own cycle mode",
				p, err, CycleProgramName)}
		}
		return CycleProgram{Path: path}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return CycleProgram{}, &CycleProgramError{Err: fmt.Errorf(
			"finding the cycle program: the path of the ecagent executable is unknown (%w): set cycle.program to the path of %s", err, CycleProgramName)}
	}
	beside := filepath.Join(filepath.Dir(exe), CycleProgramName)
	if _, err := os.Stat(beside); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return CycleProgram{Path: beside}, nil // exec says what is wrong with it, if anything
	}
	if path, err := exec.LookPath(CycleProgramName); err == nil {
		return CycleProgram{Path: path}, nil
	}
	log.Warn(CycleProgramName+" is neither beside ecagent nor in $PATH: the cycle process runs from the ecagent executable "+
		"(ecagent cycle), with the agent's libraries in its memory; install "+CycleProgramName+" beside ecagent for the small one",
		"executable", exe)
	return CycleProgram{Path: exe, Args: []string{CycleMode}}, nil
}

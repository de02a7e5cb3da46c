package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/ecagent/ecagent/agent/config"
)

// CycleProgramName is the file name of the cycle program (cmd/ecagent-cycle).
const CycleProgramName = "ecagent-cycle"

// CycleProgram returns the path of the cycle program the agent starts:
// cycle.program (a path, or a name looked up in $PATH), else
// ecagent-cycle in the directory of the running executable, else
// ecagent-cycle from $PATH.
func CycleProgram(cfg config.Config) (string, error) {
	if p := cfg.Cycle.Program; p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("cycle.program %q: %w", p, err)
		}
		return path, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the cycle program: %w", err)
	}
	beside := filepath.Join(filepath.Dir(exe), CycleProgramName)
	if _, err := os.Stat(beside); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return beside, nil // exec says what is wrong with it, if anything
	}
	path, err := exec.LookPath(CycleProgramName)
	if err != nil {
		return "", fmt.Errorf("the cycle program %s is neither beside %s nor in $PATH: install it there, or set cycle.program", CycleProgramName, exe)
	}
	return path, nil
}

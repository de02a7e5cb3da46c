package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// TestMain lets the test binary stand in for ecagent when a command under
// test starts child processes of itself (run and bench start `ecagent
// sim` through os.Executable): with ECAGENT_TEST_MAIN=1 in its environment
// the binary runs the command line instead of tests, as main does
// (signals included). The cycle process is the real ecagent-cycle, built
// once when a test first needs it (cycleEnviron). A cycle process the
// tests started that outlives them fails the run (cyclereap.Check).
func TestMain(m *testing.M) {
	if os.Getenv("ECAGENT_TEST_MAIN") == "1" {
		os.Exit(mainCode(os.Args[1:]))
	}
	cyclereap.Mark()
	code := m.Run()
	// A cycle process one of the tests started and did not reap fails the
	// run, and is killed (one once ran on for 1 h 43 min).
	code = cyclereap.Check(os.Stderr, code, 10*time.Second)
	if cycleBuild.dir != "" {
		_ = os.RemoveAll(cycleBuild.dir)
	}
	os.Exit(code)
}

// cycleBuild is cmd/ecagent-cycle built for this test run.
var cycleBuild struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

// cycleEnviron builds cmd/ecagent-cycle (once per test run) and returns
// the environment that points cycle.program at it, for commands that
// start a cycle process: pass it as their environ, or append it to a
// child's.
func cycleEnviron(t *testing.T) []string {
	t.Helper()
	b := &cycleBuild
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "ecagent-cycle-test"); b.err != nil {
			return
		}
		b.path = filepath.Join(b.dir, agent.CycleProgramName)
		b.out, b.err = exec.Command("go", "build", "-o", b.path, "github.com/ecagent/ecagent/cmd/ecagent-cycle").CombinedOutput()
	})
	if b.err != nil {
		t.Fatalf("building ecagent-cycle: %v\n%s", b.err, b.out)
	}
	return []string{config.EnvName("cycle.program") + "=" + b.path}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/shm"
	"github.com/ecagent/ecagent/sim"
)

// name is the program's name in messages.
const name = "ecagent-cycle"

// The exit codes.
const (
	exitOK          = contract.ExitOK
	exitFailure     = contract.ExitFailure
	exitUsage       = contract.ExitUsage
	exitBusMismatch = contract.ExitBusMismatch
)

// cli runs the command line in-process.
func cli(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = process.Main(name, args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestHelpFitsAScreen(t *testing.T) {
	code, out, _ := cli("--help")
	if code != exitOK {
		t.Errorf("--help exits %d", code)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > 40 {
		t.Errorf("--help has %d lines, more than a screen (40)", len(lines))
	}
	for i, l := range lines {
		if n := len([]rune(l)); n > 100 {
			t.Errorf("--help line %d has %d columns (max 100): %q", i+1, n, l)
		}
	}
	for _, want := range []string{"--config FILE", "--config-fd N", "--shm PATH", "--link-fd N", "--cycles N", "--version", "--help", "Example", "Exit codes"} {
		if !strings.Contains(out, want) {
			t.Errorf("--help lacks %q", want)
		}
	}
	if code, short, _ := cli("-h"); code != exitOK || short != out {
		t.Errorf("-h: exit %d, a different text", code)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := cli("--version")
	if code != exitOK || !regexp.MustCompile(`^ecagent-cycle \S+ \(revision \S+, go1\.\S+, \w+/\w+\)\n$`).MatchString(out) {
		t.Errorf("--version: exit %d, %q", code, out)
	}
}

func TestUsageAndConfigurationErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"cycle":{"period":"10us","prority":80}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	invalid := filepath.Join(dir, "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"cycle":{"period":"10us"},"log":{"level":"loud"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"--config FILE or --config-fd N is required", "--help"}},
		{[]string{"--config", bad, "--config-fd", "3"}, []string{"exclude each other"}},
		{[]string{"--config-fd", "0"}, []string{"--config-fd 0: want an inherited descriptor"}},
		{[]string{"--bogus"}, []string{"-bogus"}},
		{[]string{"--config", bad, "extra"}, []string{`unexpected argument "extra"`}},
		{[]string{"--config", filepath.Join(dir, "missing.json")}, []string{"missing.json", "no such file"}},
		{[]string{"--config", bad}, []string{bad, `unknown field "prority"`}},
		{[]string{"--config", invalid}, []string{`cycle.period = "10us": must be between 50us and 1s`, `log.level = "loud"`}},
	} {
		code, _, errOut := cli(c.args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", c.args, code, exitUsage, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
}

// TestConfigFromADescriptor passes the configuration as the agent does,
// through a pipe (--config-fd), and checks it is read and validated from
// there; a configuration larger than process.MaxConfigSize is refused
// unread, from a file or a pipe.
func TestConfigFromADescriptor(t *testing.T) {
	pass := func(content []byte) string {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		fd, err := unix.Dup(int(r.Fd())) // run closes the descriptor it is given
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, _ = w.Write(content); _ = w.Close() }()
		code, _, errOut := cli("--config-fd", fmt.Sprint(fd))
		if code != exitUsage {
			t.Errorf("exit %d, want %d\n%s", code, exitUsage, errOut)
		}
		return errOut
	}
	if out := pass([]byte(`{"cycle":{"period":"10us"}}`)); !strings.Contains(out, "cycle configuration fd ") ||
		!strings.Contains(out, `cycle.period = "10us"`) {
		t.Errorf("an invalid configuration through a pipe:\n%s", out)
	}
	huge := append([]byte(`{"bus":{"interface":"`), bytes.Repeat([]byte("x"), process.MaxConfigSize)...)
	if out := pass(huge); !strings.Contains(out, "larger than 1048576 bytes") {
		t.Errorf("a configuration of %d bytes through a pipe:\n%s", len(huge), out)
	}
	file := filepath.Join(t.TempDir(), "huge.json")
	if err := os.WriteFile(file, huge, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, out := cli("--config", file); code != exitUsage || !strings.Contains(out, "larger than 1048576 bytes") {
		t.Errorf("a configuration file of %d bytes: exit %d\n%s", len(huge), code, out)
	}
}

// TestRunsAgainstASimulatedSegment runs the cycle in-process on a segment
// made here, against a simulated segment on a socket pair, as the agent
// starts it (--link-fd): a run of 200 cycles exits 0 with the report line,
// a run stopped before its steady state (one cycle) reports no
// allocation, as it counted none, a segment with fewer slaves than
// expected exits 3, a segment that does not exist 1.
func TestRunsAgainstASimulatedSegment(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name     string
		expected int
		noSHM    bool
		cycles   int
		code     int
		want     string
	}{
		{"runs", 7, false, 200, exitOK, "cycles=200 mallocs_in_cycle="},
		{"one cycle", 7, false, 1, exitOK, "cycles=1 mallocs_in_cycle=0 gc_in_cycle=0 "},
		{"mismatch", 5, false, 200, exitBusMismatch, "slaves"},
		{"no segment", 0, true, 200, exitFailure, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name+".shm")
			if !c.noSHM {
				l := shm.DefaultLayout()
				l.Period = 2 * time.Millisecond
				seg, err := shm.Create(path, l)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = seg.Close() })
			}
			cfg := process.Default()
			cfg.Bus.ExpectedSlaves = c.expected
			cfg.Cycle = process.Cycle{Period: process.Duration(2 * time.Millisecond), Core: -1, SHM: path, Exchange: process.ExchangePipelined}
			cfgPath := filepath.Join(dir, c.name+".cycle.json")
			b, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
				t.Fatal(err)
			}
			fd := serveSimulatedSegment(t)
			code, _, errOut := cli("--config", cfgPath, "--link-fd", fmt.Sprint(fd), "--cycles", fmt.Sprint(c.cycles))
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, want %d with %q:\n%s", code, c.code, c.want, errOut)
			}
		})
	}
}

// serveSimulatedSegment serves the reference segment on one end of a
// socket pair until the test ends and returns the other end's descriptor,
// which the cycle's link takes over.
func serveSimulatedSegment(t *testing.T) int {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	simEnd, err := link.FileLink(fds[1])
	if err != nil {
		t.Fatal(err)
	}
	devs, err := sim.ParseDevices([]string{"EK1100", "EL2004", "EL2004", "EL1014", "EL1014", "EL4132", "EK1110"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = sim.NewSegment(devs).Serve(ctx, simEnd); close(done) }()
	t.Cleanup(func() { cancel(); _ = simEnd.Close(); <-done })
	return fds[0]
}

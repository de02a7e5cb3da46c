package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// runCLI runs ecagent in-process with args and returns its exit code and output.
func runCLI(t *testing.T, ctx context.Context, environ []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = dispatch(ctx, &env{stdout: &out, stderr: &errOut, environ: environ}, args)
	return code, out.String(), errOut.String()
}

func TestHelpExplainsEveryCommand(t *testing.T) {
	code, out, _ := runCLI(t, context.Background(), nil, "--help")
	if code != exitOK {
		t.Errorf("--help exits %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(out, c.name) {
			t.Errorf("--help does not mention %q", c.name)
		}
		code, out, errOut := runCLI(t, context.Background(), nil, c.name, "--help")
		if code != exitOK || !strings.Contains(out, "Usage: ecagent "+c.name) {
			t.Errorf("%s --help: exit %d, output %q %q", c.name, code, out, errOut)
		}
	}
	// run --help documents every configuration key and where it comes from.
	_, out, _ = runCLI(t, context.Background(), nil, "run", "--help")
	for _, flag := range []string{"--cycle.period", "--bus.interface", "--bus.devices", "--config", "--print-config", "ECAGENT_CYCLE_PERIOD"} {
		if !strings.Contains(out, flag) {
			t.Errorf("run --help does not explain %s", flag)
		}
	}
}

func TestExitCodes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		args    []string
		environ []string
		code    int
		stderr  string // must appear in stderr
	}{
		{"no command", nil, nil, exitUsage, ""},
		{"unknown command", []string{"frobnicate"}, nil, exitUsage, `unknown command "frobnicate"`},
		{"unknown flag", []string{"scan", "--nope"}, nil, exitUsage, "unknown flag: --nope"},
		{"bad period", []string{"run", "--cycle.period", "10us"}, nil, exitUsage, `cycle.period = "10us"`},
		{"bad env", []string{"run"}, []string{"ECAGENT_CYCLE_PRIORITY=120"}, exitUsage, "cycle.priority"},
		{"unknown model", []string{"scan", "--sim", "--devices", "EK1100,EL9999"}, nil, exitUsage, "EL9999"},
		{"sim without interface", []string{"sim"}, nil, exitUsage, "--iface is required"},
		{"sim bad pattern", []string{"sim", "--iface", "lo", "--inputs", "zigzag"}, nil, exitUsage, "zigzag"},
		{"slave count", []string{"scan", "--sim", "--expected-slaves", "3"}, nil, exitBusMismatch, "3"},
		{"no agent, no interface", []string{"slaves", "--cycle.shm", "/nonexistent/x.shm"}, nil, exitUsage, "neither --iface nor --sim"},
		{"devices without sim", []string{"slaves", "--devices", "EK1100"}, nil, exitUsage, "add --sim"},
		{"sim and iface", []string{"slaves", "--sim", "--iface", "lo"}, nil, exitUsage, "exclude each other"},
		{"IgH name misspelt", []string{"upload_sdo"}, nil, exitUsage, `did you mean "upload"?`},
		{"near miss", []string{"slave"}, nil, exitUsage, `did you mean "slaves"?`},
		{"no such interface", []string{"scan", "--iface", "ecagent-none0"}, nil, exitFailure, "ecagent-none0"},
		{"stray argument", []string{"version", "extra"}, nil, exitUsage, `unexpected argument "extra"`},
		{"cycle.program a path that is not there", []string{"run"}, []string{"ECAGENT_CYCLE_PROGRAM=/nonexistent/ecagent-cycle"}, exitUsage,
			`cycle.program = "/nonexistent/ecagent-cycle" (ECAGENT_CYCLE_PROGRAM): cannot use the cycle program: no such file or directory`},
		{"cycle.program a name not in $PATH", []string{"run"}, []string{"ECAGENT_CYCLE_PROGRAM=ecagent-cycle-none"}, exitUsage,
			`cycle.program "ecagent-cycle-none": exec: "ecagent-cycle-none": executable file not found in $PATH: install it, or leave cycle.program empty`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, ctx, c.environ, c.args...)
			if code != c.code || !strings.Contains(stderr, c.stderr) {
				t.Errorf("exit %d (want %d), stderr %q (want it to contain %q)", code, c.code, stderr, c.stderr)
			}
		})
	}
}

func TestScanSimulatedSegment(t *testing.T) {
	code, out, errOut := runCLI(t, context.Background(), nil, "scan", "--sim", "--devices", "EK1100,EL2004,EL1014,EL4132")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 7 || lines[0] != simulatedLine {
		t.Fatalf("no simulated header:\n%s", out)
	}
	lines = lines[1:]
	if len(lines) != 6 || !strings.HasPrefix(lines[0], "POS") || lines[5] != "4 slaves" {
		t.Fatalf("table:\n%s", out)
	}
	for i, want := range []string{
		"0    0x1001  INIT   0x00000002  0x044c2c52",
		"1    0x1002  INIT   0x00000002  0x07d43052",
		"2    0x1003  INIT   0x00000002  0x03f63052",
		"3    0x1004  INIT   0x00000002  0x10243052",
	} {
		if !strings.HasPrefix(lines[i+1], want) {
			t.Errorf("row %d = %q, want prefix %q", i, lines[i+1], want)
		}
	}
	for _, col := range []string{"EL2004 4K. Dig. Ausgang", "  0   4    yes", "  4   0    yes", "  0   32   yes"} {
		if !strings.Contains(out, col) {
			t.Errorf("table lacks %q:\n%s", col, out)
		}
	}
}

func TestRunReachesOPAndStops(t *testing.T) {
	t.Setenv("ECAGENT_TEST_MAIN", "1") // the sim process is this binary
	environ := cycleEnviron(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shmPath := fmt.Sprintf("/dev/shm/ecagent-cmdtest-%d.shm", os.Getpid())
	// Stopped once it has printed three status lines and one of them
	// shows the bus in OP with the full working counter, however long the
	// bring-up took on this host and however many frames it lost.
	stdout, stderr := &testsupport.SyncBuffer{}, &testsupport.SyncBuffer{}
	exited := make(chan int, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		exited <- dispatch(ctx, &env{stdout: stdout, stderr: stderr, environ: environ}, []string{"run", "--status.interval", "200ms",
			"--metrics.listen", "", "--cycle.shm", shmPath})
	}()
	// A test that failed before the agent returned stops it here, with its
	// cycle process; one that outlives it is stopped by its segment.
	t.Cleanup(func() {
		cancel()
		select {
		case <-returned:
		case <-time.After(30 * time.Second):
			t.Errorf("the agent did not return within 30 s of its context's end")
		}
		cyclereap.Stop(t, shmPath)
	})
	var code int
	deadline := time.After(30 * time.Second)
wait:
	for {
		select {
		case code = <-exited:
			break wait
		case <-deadline:
			cancel()
			t.Fatalf("no 3 status lines with one in OP and wkc 8/8 within 30 s:\n%s\n%s", stdout.String(), stderr.String())
		case <-time.After(20 * time.Millisecond):
			if out := stdout.String(); strings.Count(out, "\n") >= 3 && opWithFullWKC(out) {
				cancel()
			}
		}
	}
	out, errOut := stdout.String(), stderr.String()
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(shmPath); err == nil {
		t.Errorf("segment %s left behind", shmPath)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 {
		t.Fatalf("want several status lines, got:\n%s", out)
	}
	// Every line is of the segment brought up: its 7 slaves. In OP, or —
	// on a host so loaded that frames are lost ("lost N", the bus alarm)
	// and slaves' watchdogs drop them to SAFEOP for a while — a state
	// that says so (MIXED); a line in OP with the full working counter
	// came (the wait above).
	for _, l := range lines {
		if !strings.Contains(l, "  slaves 7 ") {
			t.Errorf("status line %q: not the 7 slaves brought up", l)
		}
	}
	if !opWithFullWKC(out) {
		t.Errorf("no status line in OP with the full working counter:\n%s", out)
	}
}

// opWithFullWKC reports whether a status line of out shows the bus in OP
// with the full working counter of the default segment. The working
// counter shown is the last cycle's: a loaded host may lose that one
// frame (the line then says so, "wkc 0/8 lost N"), not every line's.
func opWithFullWKC(out string) bool {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, " OP ") && strings.Contains(l, "wkc 8/8") {
			return true
		}
	}
	return false
}

func TestPrintConfig(t *testing.T) {
	code, out, _ := runCLI(t, context.Background(), []string{"ECAGENT_CYCLE_PERIOD=250us"}, "run", "--print-config", "--site", "plant1")
	if code != exitOK || !strings.Contains(out, "period: 250us") || !strings.Contains(out, "site: plant1") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, context.Background(), nil, "version")
	if code != exitOK || !strings.HasPrefix(out, "ecagent ") || !strings.Contains(out, "go1.") {
		t.Errorf("exit %d: %q", code, out)
	}
}

func TestRTCheckJSONAndExitCode(t *testing.T) {
	code, out, errOut := runCLI(t, context.Background(), nil, "rtcheck", "--json", "--cycle.core", "0")
	var results []struct {
		ID, Status, Found string
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil {
		t.Fatalf("rtcheck --json: %v\n%s", err, out)
	}
	if len(results) != 19 {
		t.Errorf("%d checks, want 19", len(results))
	}
	failed := false
	for _, r := range results {
		if r.ID == "" || r.Found == "" || !strings.Contains("pass warn fail skip", r.Status) {
			t.Errorf("result %+v", r)
		}
		failed = failed || r.Status == "fail"
	}
	// The exit code follows the checks: 1 with a failure, 0 without.
	if want := map[bool]int{true: exitFailure, false: exitOK}[failed]; code != want {
		t.Errorf("exit %d with failed=%v (want %d): %s", code, failed, want, errOut)
	}
}

// TestCycleModeIsHidden: `ecagent cycle` is the cycle process's command
// line (the binary stands in, as the agent starts it), and the help of
// ecagent does not list it.
func TestCycleModeIsHidden(t *testing.T) {
	_, out, _ := runCLI(t, context.Background(), nil, "--help")
	if strings.Contains(out, "\n  "+agent.CycleMode+" ") {
		t.Errorf("--help lists the hidden %s mode:\n%s", agent.CycleMode, out)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, exitOK, "Usage: ecagent cycle (--config FILE | --config-fd N)"},
		{[]string{"--version"}, exitOK, "ecagent cycle "},
		{nil, exitUsage, "ecagent cycle: --config FILE or --config-fd N is required\nRun 'ecagent cycle --help' for usage."},
	} {
		cmd := exec.Command(os.Args[0], append([]string{agent.CycleMode}, c.args...)...)
		cmd.Env = append(os.Environ(), "ECAGENT_TEST_MAIN=1")
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("ecagent cycle %q: exit %d (want %d)\n%s\nwant %q", c.args, code, c.code, out, c.want)
		}
	}
}

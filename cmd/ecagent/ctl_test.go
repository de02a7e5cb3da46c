package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
	"github.com/ecagent/ecagent/master"
)

// ctlAgent is an `ecagent run` on the built-in simulated segment, whose
// cycle process serves the control socket of shm.
type ctlAgent struct {
	shm    string
	lines  chan string // its status lines
	stderr *testsupport.SyncBuffer
}

// startCtlAgent starts the agent and waits for its first status line in OP.
func startCtlAgent(t *testing.T) *ctlAgent {
	t.Helper()
	a := &ctlAgent{shm: fmt.Sprintf("/dev/shm/ecagent-ctltest-%d.shm", os.Getpid()), lines: make(chan string, 1000),
		stderr: &testsupport.SyncBuffer{}}
	cmd := exec.Command(os.Args[0], "run", "--status.interval", "200ms", "--metrics.listen", "",
		"--cycle.shm", a.shm, "--log.level", "warn", "--bus.timeout", "200ms")
	cmd.Env = append(append(os.Environ(), "ECAGENT_TEST_MAIN=1"), cycleEnviron(t)...)
	cmd.Stderr = a.stderr
	cmd.WaitDelay = 10 * time.Second // its children hold stderr until they stop
	t.Cleanup(func() {
		if cmd.Process == nil {
			return
		}
		// SIGTERM stops the agent with its cycle and simulator; a kill
		// leaves them running, and the cycle process is stopped by its
		// segment then.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		cyclereap.Stop(t, a.shm)
	})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		in := bufio.NewScanner(stdout)
		for in.Scan() {
			select {
			case a.lines <- in.Text():
			default: // nobody reads them now
			}
		}
		close(a.lines)
	}()
	if l := a.next(t); !strings.Contains(l, " OP ") {
		t.Fatalf("first status line not in OP: %q\n%s", l, a.stderr.String())
	}
	return a
}

// next returns the agent's next status line.
func (a *ctlAgent) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-a.lines:
		if !ok {
			t.Fatalf("the agent exited:\n%s", a.stderr.String())
		}
		return l
	case <-time.After(30 * time.Second):
		t.Fatalf("no status line in 30 s:\n%s", a.stderr.String())
	}
	return ""
}

// overrunCount is what a status line counts of the cycles and their
// overruns since the agent started.
type overrunCount struct {
	cycles, overruns int
	// acyclicCycles carried acyclic datagrams; acyclicOverruns is the
	// overruns among them.
	acyclicCycles, acyclicOverruns int
}

// statusCounts reads the counts from a status line.
var statusCounts = regexp.MustCompile(`cycles (\d+) .*overruns (\d+) \(acyclic (\d+) of (\d+)\)`)

// overruns returns the counts of a fresh status line.
func (a *ctlAgent) overruns(t *testing.T) overrunCount {
	t.Helper()
	for len(a.lines) > 0 { // drop lines of the past
		<-a.lines
	}
	l := a.next(t)
	m := statusCounts.FindStringSubmatch(l)
	if m == nil {
		t.Fatalf("no cycle and overrun counts in status line %q", l)
	}
	var n [4]int
	for i := range n {
		n[i], _ = strconv.Atoi(m[i+1])
	}
	return overrunCount{cycles: n[0], overruns: n[1], acyclicOverruns: n[2], acyclicCycles: n[3]}
}

// checkAcyclicOverruns fails t unless the requests between from and to
// went through the agent's cycle (cycles carried acyclic datagrams) and
// those cycles overran no more often than the others beyond noise. Each
// overrun is counted by its kind, in the same window: the host's own
// overruns (other tests, the requests' own work on two shared cores) hit
// both kinds of cycle alike, while a cycle that waited for a mailbox or
// did the requests' work would overrun in most cycles that carried them.
func checkAcyclicOverruns(t *testing.T, from, to overrunCount) {
	t.Helper()
	acyclic, acyclicCycles := to.acyclicOverruns-from.acyclicOverruns, to.acyclicCycles-from.acyclicCycles
	other := (to.overruns - to.acyclicOverruns) - (from.overruns - from.acyclicOverruns)
	otherCycles := (to.cycles - to.acyclicCycles) - (from.cycles - from.acyclicCycles)
	t.Logf("overruns: %d in %d cycles that carried acyclic datagrams, %d in %d others", acyclic, acyclicCycles, other, otherCycles)
	if acyclicCycles == 0 {
		t.Fatalf("no cycle carried acyclic datagrams: the requests did not go through the agent's cycle")
	}
	rate, otherRate := float64(acyclic)/float64(acyclicCycles), float64(other)/float64(max(otherCycles, 1))
	if acyclic > 5 && rate > max(3*otherRate, 0.05) {
		t.Errorf("%d overruns in %d cycles that carried acyclic datagrams (%.1f %%), against %.2f %% in the others",
			acyclic, acyclicCycles, 100*rate, 100*otherRate)
	}
}

// ctlCase is a maintenance command run with and without the agent.
type ctlCase struct {
	name string
	args []string
	// perMode: the output depends on the slaves' state (OP under the
	// agent, INIT in a segment just scanned), so each mode has its file.
	perMode bool
	// match, when set, replaces the golden file: a pattern the output of
	// each mode (agent true or false) must match.
	match func(agent bool) string
}

func ctlCases() []ctlCase {
	return []ctlCase{
		{name: "slaves", args: []string{"slaves"}, perMode: true},
		{name: "slaves-v", args: []string{"slaves", "-v"}, perMode: true},
		{name: "slaves-json", args: []string{"slaves", "--json"}, perMode: true},
		{name: "reg-read-esc-info", args: []string{"reg", "read", "0", "0x0000", "16"}},
		{name: "reg-read-station", args: []string{"reg", "read", "3", "0x0010", "--type", "uint16"}},
		{name: "reg-write", args: []string{"reg", "write", "1", "0x0f80", "0x0102", "--type", "uint16", "--write"}},
		{name: "reg-read-json", args: []string{"reg", "read", "2", "0x0008", "2", "--json"}},
		{name: "crc", args: []string{"crc", "--interval", "200ms"}},
		{name: "crc-json", args: []string{"crc", "--interval", "0", "--json"}},
		{name: "sii-read-1", args: []string{"sii", "read", "1"}},
		{name: "sii-write-1", args: []string{"sii", "write", "1", filepath.Join("testdata", "ctl", "sii-read-1.golden"), "--write"}},
		{name: "alias-2", args: []string{"alias", "2", "0", "--write"}},
		{name: "graph", args: []string{"graph"}},
		{name: "pdos", args: []string{"pdos"}},
		{name: "domains", args: []string{"domains"}},
		{name: "domains-json", args: []string{"domains", "--json"}},
		{name: "config-from-bus", args: []string{"config", "from-bus"}},
		{name: "sdo-read", args: []string{"sdo", "read", "-p", "5", "0x1018:02"}},
		{name: "sdo-write", args: []string{"sdo", "write", "-p", "5", "--type", "u32", "0xf008:0", "0x12345678", "--json"}},
		{name: "upload", args: []string{"upload", "-p", "5", "1018:1", "--type", "u32"}},
		{name: "sdos", args: []string{"sdos", "-p", "5"}},
		{name: "scan", args: []string{"scan"}, perMode: true},
		{name: "slaves-p3", args: []string{"slaves", "-p", "3"}, perMode: true},
		{name: "pdos-p3", args: []string{"pdos", "-p", "3"}},
		{name: "reg-read-p3", args: []string{"reg_read", "-p", "3", "0x0010", "-t", "uint16"}},
		{name: "diag-p5", args: []string{"diag", "-p", "5"}, match: func(agent bool) string {
			// Counters a host stall may move (the watchdog's) are not pinned.
			if agent {
				return `(?s)^# simulated segment.*\nslave 5 \(0x1006 EL4132\)\nAL state: OP\n.*\n0 +EBUS +up .*` +
					`Watchdog: process data 100\.0 ms \(running, expired \d+ times\).*SM2 0x1100\+4 buffered, written by the master, enabled, watchdog on\n` +
					`FMMUs:\n  FMMU0 logical 0x00000001\+4 → 0x1100, write, active\n$`
			}
			return `(?s)^# simulated segment.*\nslave 5 \(0x1006 EL4132\)\nAL state: INIT\n.*SyncManagers:\nFMMUs:\n$`
		}},
		{name: "rescan", args: []string{"rescan"}},
		{name: "eoe", args: []string{"eoe"}},
		{name: "crc-p3-json", args: []string{"crc", "-p", "3", "--interval", "0", "--json"}},
		{name: "data", args: []string{"data"}, match: func(agent bool) string {
			if agent { // the cycle's image, from the shared-memory segment
				return `^# simulated segment \(the built-in simulator\): no real slaves\nProcess image: 6 bytes \(cycle [1-9]\d*\)\nOutputs:\n  0x0000: ([0-9a-f]{2} ){4}[0-9a-f]{2}\nInputs:\n  0x0005: [0-9a-f]{2}\n$`
			}
			return `^# simulated segment \(the built-in simulator\): no real slaves\nProcess image: 6 bytes\nOutputs:\n  0x0000: ([0-9a-f]{2} ){4}[0-9a-f]{2}\nInputs:\n  0x0005: [0-9a-f]{2}\n$`
		}},
		{name: "master", args: []string{"master", "--interval", "300ms"}, match: func(agent bool) string {
			if agent { // the cycle runs: about 1000 cycles/s (1 ms)
				return `(?s)Link: \(simulated segment\)\nSlaves: 7\n.*cycles: +\d+ \(\+[1-9]\d*/s\)`
			}
			return `(?s)Link: \(simulated segment\)\nSlaves: 7\n.*cycles: +0 \(\+0/s\)`
		}},
		// Last: a state request may disturb the agent's cycle for a while.
		{name: "states-all-op", args: []string{"states", "all", "OP", "--write"}},
	}
}

// TestCtlRefusals checks the errors of the maintenance commands, on a
// segment the command opens itself.
func TestCtlRefusals(t *testing.T) {
	noAgent := filepath.Join(t.TempDir(), "none.shm")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"reg", "write", "1", "0x0f80", "1", "--type", "uint8"}, exitUsage, "add --write to confirm"},
		{[]string{"states", "all", "PREOP"}, exitUsage, "add --write to confirm"},
		{[]string{"states", "5", "BOOT", "--write"}, exitFailure,
			"no bootstrap mailbox: BOOT refused before the slave's state was touched (it stays in INIT)"},
		{[]string{"foe", "read", "5", "fw.bin"}, exitFailure, "no bootstrap mailbox: BOOT refused before"},
		{[]string{"states", "1", "RUN", "--write"}, exitFailure, `state "RUN": want INIT, PREOP, BOOT, SAFEOP or OP`},
		{[]string{"reg", "read", "9", "0x0130"}, exitFailure, "slave 9: the segment has 7 slaves"},
		{[]string{"reg", "read", "1", "0x0130", "4", "--type", "uint16"}, exitUsage, "does not match --type uint16"},
		{[]string{"reg", "read", "x", "0x0130"}, exitUsage, "want a ring position"},
		{[]string{"diag"}, exitUsage, "name the slave: -p N"},
		{[]string{"xml", "1", "2"}, exitUsage, `want -p N, got "1 2"`},
		{[]string{"diag", "x"}, exitUsage, "want a ring position"},
		{[]string{"alias", "1", "5"}, exitUsage, "add --write to confirm"},
		{[]string{"sii", "write", "1", filepath.Join("testdata", "ctl", "sii-read-1.golden")}, exitUsage, "add --write"},
		{[]string{"sii", "write", "3", filepath.Join("testdata", "ctl", "sii-read-1.golden"), "--write"}, exitFailure,
			"refused without --force"},
		{[]string{"sii", "write", "1", filepath.Join("testdata", "ctl", "crc.golden"), "--write"}, exitUsage, "SII image"},
	} {
		code, _, errOut := runCLI(t, context.Background(), nil, append(c.args, "--cycle.shm", noAgent, "--sim", "--timeout", "100ms")...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d (want %d), stderr %q, want %q", c.args, code, c.code, errOut, c.want)
		}
	}
}

// checkOutput checks the output of c in one mode.
func checkOutput(t *testing.T, c ctlCase, agent bool, name, out string) {
	t.Helper()
	if c.match == nil {
		checkGolden(t, name, out)
		return
	}
	if re := c.match(agent); !regexp.MustCompile(re).MatchString(out) {
		t.Errorf("%s (agent %v) does not match %s:\n%s", c.name, agent, re, out)
	}
}

// checkGolden compares got with testdata/ctl/name.golden (-update rewrites it).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	testsupport.Golden(t, filepath.Join("testdata", "ctl", name+".golden"), []byte(got))
}

// TestCtlCommands runs each maintenance command against a running agent
// (through its control socket) and on a segment it opens itself, and
// compares both with the golden files; the cycles that carried the
// requests must not overrun more often than the others
// (checkAcyclicOverruns).
func TestCtlCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	noAgent := filepath.Join(t.TempDir(), "none.shm")
	a := startCtlAgent(t)
	// The same commands on segments of their own load the host as much
	// as through the agent (more: the simulator runs in this process)
	// and send its cycle nothing: its other cycles' overrun rate.
	from := a.overruns(t)
	for _, c := range ctlCases() {
		code, out, errOut := runCLI(t, ctx, nil, append(c.args, "--cycle.shm", noAgent, "--sim", "--timeout", "100ms")...)
		if code != exitOK {
			t.Fatalf("%s without agent: exit %d: %s", c.name, code, errOut)
		}
		name := c.name
		if c.perMode {
			name += ".local"
		}
		checkOutput(t, c, false, name, out)
	}
	for _, c := range ctlCases() {
		code, out, errOut := runCLI(t, ctx, nil, append(c.args, "--cycle.shm", a.shm)...)
		// A stall of the host over the process data watchdog's 100 ms
		// leaves a slave in SAFEOP with an error until recovery takes it
		// back to OP, within a second: a state the agent shows truly,
		// not a difference of the command.
		for end := time.Now().Add(5 * time.Second); code == exitOK && slaveRecovering(out) && time.Now().Before(end); {
			t.Logf("%s: a slave out of OP (a host stall?); asking again:\n%s", c.name, out)
			time.Sleep(200 * time.Millisecond)
			code, out, errOut = runCLI(t, ctx, nil, append(c.args, "--cycle.shm", a.shm)...)
		}
		if code != exitOK {
			t.Fatalf("%s with agent: exit %d: %s", c.name, code, errOut)
		}
		name := c.name
		if c.perMode {
			name += ".agent"
		}
		checkOutput(t, c, true, name, out)
	}
	checkAcyclicOverruns(t, from, a.overruns(t))
}

// slaveRecovering reports whether the output of a command through the
// agent shows a slave on its way back to OP after a host stall: in error,
// or acknowledged and in SAFEOP.
func slaveRecovering(out string) bool {
	for _, sign := range []string{"Error: yes", " SAFEOP ", `"state": "SAFEOP"`, `"error": true`} {
		if strings.Contains(out, sign) {
			return true
		}
	}
	return false
}

// TestConfigFromBusIsValid reads the configuration snippet of a segment
// back with config check, and checks the help of config from-bus.
func TestConfigFromBusIsValid(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, context.Background(), nil, "config", "from-bus", "--cycle.shm",
		filepath.Join(dir, "none.shm"), "--timeout", "100ms", "--sim", "--devices", "EK1100,EL3004,EL4132")
	if code != exitOK || !strings.Contains(out, "- slave: 1  # EL3004") {
		t.Fatalf("exit %d: %s\n%s", code, out, errOut)
	}
	path := filepath.Join(dir, "bus.yaml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, context.Background(), nil, "config", "check", path); code != exitOK {
		t.Errorf("config check of:\n%s\n%s", out, errOut)
	}
	out, _ = helpOf(t, "config", "from-bus")
	if n := strings.Count(out, "\n"); n > 40 || !strings.Contains(out, "Example") {
		t.Errorf("config from-bus --help: %d lines:\n%s", n, out)
	}
}

// TestStatsRatesCoverEveryCounter: each counter of master.Stats gets its
// rate, frames sent included (it stayed 0 when listed by hand).
func TestStatsRatesCoverEveryCounter(t *testing.T) {
	var a, b master.Stats
	vb := reflect.ValueOf(&b).Elem()
	for i := range vb.NumField() {
		vb.Field(i).SetUint(uint64(10 * (i + 1)))
	}
	r := reflect.ValueOf(statsRates(a, b, 10*time.Second))
	for i := range r.NumField() {
		if got := r.Field(i).Uint(); got != uint64(i+1) {
			t.Errorf("rate of %s: %d, want %d", r.Type().Field(i).Name, got, i+1)
		}
	}
}

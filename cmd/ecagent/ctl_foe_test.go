package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/maintenance"
)

// foeDevices is a segment with a drive whose boot loader serves FoE.
var foeDevices = []string{"--sim", "--devices", "EK1100,AKD", "--timeout", "100ms"}

// foeFile writes n bytes of a deterministic pattern to a file in dir.
func foeFile(t *testing.T, dir string, n int) string {
	t.Helper()
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ 0x5A
	}
	path := filepath.Join(dir, "fw.bin")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// foeTimes replaces the durations of an outcome line.
var foeTimes = regexp.MustCompile(`in [0-9.]+(ns|µs|ms|s|m[0-9.]+s);`)

// TestFoEWriteCommand writes a 3000-byte file on a segment the command
// opens itself: progress a line a packet (a third each), the outcome,
// and the same as JSON.
func TestFoEWriteCommand(t *testing.T) {
	dir := t.TempDir()
	file := foeFile(t, dir, 3000)
	base := append([]string{"--cycle.shm", filepath.Join(dir, "none.shm")}, foeDevices...)
	code, out, errOut := runCLI(t, context.Background(), nil, append([]string{"foe", "write", "1", file, "--write"}, base...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	checkGolden(t, "foe-write", foeTimes.ReplaceAllString(out, "in TIME;"))
	checkGolden(t, "foe-write-progress", errOut)
	code, out, errOut = runCLI(t, context.Background(), nil,
		append([]string{"foe", "write", "1", file, "--write", "--name", "AKD.i00", "--password", "0x1234", "--json"}, base...)...)
	var res maintenance.FoEResult
	if code != exitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("--json: exit %d: %s %s", code, out, errOut)
	}
	if res.Slave != 1 || res.Name != "AKD.i00" || res.Bytes != 3000 || res.State != "INIT" || res.Seconds <= 0 {
		t.Errorf("--json: %+v", res)
	}
}

// TestFoEErrors checks the refusals and the slave's FoE errors.
func TestFoEErrors(t *testing.T) {
	dir := t.TempDir()
	file := foeFile(t, dir, 100)
	base := append([]string{"--cycle.shm", filepath.Join(dir, "none.shm")}, foeDevices...)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		// Refused before the bus: the interface does not exist.
		{[]string{"foe", "write", "1", file, "--iface", "no-such-nic0"}, exitUsage, "add --write to confirm"},
		{[]string{"foe", "write", "1", file, "--write", "--password", "xyz"}, exitUsage, "want up to 8 hex digits"},
		{[]string{"foe", "erase", "1", "x"}, exitUsage, "want write SLAVE FILE or read SLAVE NAME"},
		{[]string{"foe", "write", "0", file, "--write"}, exitFailure, "no bootstrap mailbox"},
		{[]string{"foe", "read", "1", "missing.bin"}, exitFailure, "FoE error 0x8001 (not found)"},
	} {
		code, _, errOut := runCLI(t, context.Background(), nil, append(c.args, base...)...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d (want %d), stderr %q, want %q", c.args, code, c.code, errOut, c.want)
		}
	}
	code, out, _ := runCLI(t, context.Background(), nil, append([]string{"foe", "read", "1", "missing.bin", "--json"}, base...)...)
	var f foeFailure
	if err := json.Unmarshal([]byte(out), &f); code != exitFailure || err != nil || f.FoE == nil || f.FoE.Code != 0x8001 ||
		f.FoE.Meaning != "not found" {
		t.Errorf("read --json of a missing file: exit %d, %s", code, out)
	}
}

// cancelOnProgress is a stderr that cancels the command's context at
// the first progress line.
type cancelOnProgress struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelOnProgress) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte(" bytes\n")) {
		w.cancel()
	}
	return w.buf.Write(p)
}

// TestFoEWriteInterrupted stops a write after its first packet (Ctrl-C):
// the command says so, and the next write goes through whole.
func TestFoEWriteInterrupted(t *testing.T) {
	dir := t.TempDir()
	file := foeFile(t, dir, 50_000)
	args := append([]string{"foe", "write", "1", file, "--write", "--cycle.shm", filepath.Join(dir, "none.shm")}, foeDevices...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOnProgress{cancel: cancel}
	var out bytes.Buffer
	code := dispatch(ctx, &env{stdout: &out, stderr: stderr}, args)
	if code != exitInterrupted || !strings.Contains(stderr.buf.String(), "context canceled") ||
		strings.Count(stderr.buf.String(), "%") != 1 {
		t.Errorf("interrupted write: exit %d (want %d), stdout %q, stderr:\n%s", code, exitInterrupted, out.String(), stderr.buf.String())
	}
	code, outs, errOut := runCLI(t, context.Background(), nil, args...)
	if code != exitOK || !strings.Contains(outs, "wrote 50000 bytes") || !strings.Contains(errOut, "100 % 50000/50000") {
		t.Errorf("retry: exit %d: %s\n%s", code, outs, errOut)
	}
}

// TestFoEThroughAgent: through a running agent a firmware file is
// written to the drive in BOOT and read back identical (the transfer
// holds the slave, so that recovery does not take it back to OP
// half-way), the drive is back in OP afterwards, and the cycles that
// carried the transfer overran no more often than the others
// (checkAcyclicOverruns).
func TestFoEThroughAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an agent")
	}
	t.Setenv("ECAGENT_BUS_DEVICES", "EK1100,AKD")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	file := foeFile(t, dir, 3000)
	a := startCtlAgent(t)
	from := a.overruns(t)
	code, out, errOut := runCLI(t, ctx, nil, "foe", "write", "1", file, "--write", "--cycle.shm", a.shm)
	if code != exitOK || !strings.Contains(out, "wrote 3000 bytes") {
		t.Fatalf("foe write through the agent: exit %d:\n%s%s", code, out, errOut)
	}
	back := filepath.Join(dir, "back.bin")
	code, out, errOut = runCLI(t, ctx, nil, "foe", "read", "1", filepath.Base(file), "-o", back, "--cycle.shm", a.shm)
	want, _ := os.ReadFile(file)
	got, _ := os.ReadFile(back)
	if code != exitOK || !bytes.Equal(got, want) {
		t.Fatalf("foe read through the agent: exit %d, %d of %d bytes identical:\n%s%s", code, len(got), len(want), out, errOut)
	}
	// Given back, the drive returns to OP.
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, out, _ = runCLI(t, ctx, nil, "slaves", "--cycle.shm", a.shm)
		if regexp.MustCompile(`(?m)^1 .* OP .*AKD`).MatchString(out) || time.Now().After(end) {
			break
		}
	}
	if code != exitOK || !regexp.MustCompile(`(?m)^1 .* OP .*AKD`).MatchString(out) {
		t.Errorf("slaves after the transfer: exit %d:\n%s", code, out)
	}
	checkAcyclicOverruns(t, from, a.overruns(t))
}

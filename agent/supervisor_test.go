package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/config"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/shm"
)

// nobody is the user the tests give planted files to.
const nobody = 65534

// asRoot skips a test that plants another user's files unless it runs
// as root (CI does).
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("planting another user's files needs root")
	}
}

// stubCycle returns a cycle.program that copies the configuration it is
// given (--config-fd) to the file out and exits 1, as a cycle that fails
// bring-up.
func stubCycle(t *testing.T, out string) string {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "cycle-stub")
	script := "#!/bin/sh\nfd=\nwhile [ $# -gt 0 ]; do [ \"$1\" = --config-fd ] && fd=$2; shift; done\n" +
		"[ -n \"$fd\" ] && eval \"cat <&$fd\" >" + out + "\nexit 1\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog
}

// findProgram is FindCycleProgram for cfg, which must name one.
func findProgram(t *testing.T, cfg config.Config) CycleProgram {
	t.Helper()
	prog, err := FindCycleProgram(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	return prog
}

// plant creates a file of user nobody, mode 0666, with content, as a
// local user could in /dev/shm.
func plant(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, nobody, nobody); err != nil {
		t.Fatal(err)
	}
}

// stickyDir returns a new directory like /dev/shm: world-writable,
// sticky.
func stickyDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStartCycleWritesNoSideFile plants what a local user could beside a
// segment in /dev/shm — the cycle configuration's old name as a symbolic
// link to a file of theirs, the legacy configuration as a file of theirs —
// and checks that starting the cycle writes through neither, deletes
// neither, and hands the cycle its configuration through a pipe.
func TestStartCycleWritesNoSideFile(t *testing.T) {
	asRoot(t)
	dir := stickyDir(t)
	victim := filepath.Join(t.TempDir(), "victim")
	plant(t, victim, "theirs")
	cfg := config.Default()
	cfg.Bus.Interface = "lo" // not simulated: no simulator process
	cfg.Cycle.SHM = filepath.Join(dir, "x.shm")
	got := filepath.Join(t.TempDir(), "got.json")
	cfg.Cycle.Program = stubCycle(t, got)
	cfg.MQTT.Password = "s3cret"
	if err := os.Symlink(victim, contract.LegacyCycleConfigPath(cfg.Cycle.SHM)); err != nil {
		t.Fatal(err)
	}
	plant(t, contract.LegacyAgentConfigPath(cfg.Cycle.SHM), "their yaml")

	_, err := StartCycle(context.Background(), cfg, findProgram(t, cfg), quiet, 0)
	if err == nil || !strings.Contains(err.Error(), "exited during bring-up") {
		t.Fatalf("StartCycle with a failing cycle program: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "theirs" {
		t.Errorf("the file the planted symlink points to now holds %q", b)
	}
	if b, _ := os.ReadFile(contract.LegacyAgentConfigPath(cfg.Cycle.SHM)); string(b) != "their yaml" {
		t.Errorf("another user's file beside the segment was replaced or removed: %q", b)
	}
	if fi, err := os.Lstat(contract.LegacyCycleConfigPath(cfg.Cycle.SHM)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the planted symlink was replaced or removed: %v", err)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatalf("the cycle program got no configuration: %v", err)
	}
	c, err := contract.Parse(b)
	if err != nil || c.Cycle.SHM != cfg.Cycle.SHM {
		t.Errorf("the configuration through the pipe: %v, shm %q", err, c.Cycle.SHM)
	}
	if strings.Contains(string(b), "s3cret") {
		t.Error("the cycle configuration holds the MQTT password")
	}
	if _, err := os.Lstat(cfg.Cycle.SHM); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the segment is left behind: %v", err)
	}
}

// TestAttachOrStartRefusesPlantedSegment plants cycle.shm as a symbolic
// link to a real segment and as another user's segment: the agent
// refuses both with an error that says why, and touches neither.
func TestAttachOrStartRefusesPlantedSegment(t *testing.T) {
	asRoot(t)
	dir := stickyDir(t)
	real := filepath.Join(t.TempDir(), "real.shm")
	l := shm.DefaultLayout()
	seg, err := shm.Create(real, l)
	if err != nil {
		t.Fatal(err)
	}
	_ = seg.Close()

	cfg := config.Default()
	cfg.Cycle.SHM = filepath.Join(dir, "link.shm")
	ran := filepath.Join(t.TempDir(), "ran.json")
	cfg.Cycle.Program = stubCycle(t, ran) // must never get that far
	if err := os.Symlink(real, cfg.Cycle.SHM); err != nil {
		t.Fatal(err)
	}
	_, err = attachOrStart(context.Background(), cfg, quiet)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), cfg.Cycle.SHM) {
		t.Errorf("cycle.shm a symlink: %v", err)
	}
	if fi, err := os.Lstat(cfg.Cycle.SHM); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the symlink was removed: %v", err)
	}

	foreign := filepath.Join(dir, "foreign.shm")
	if err := os.Link(real, foreign); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(foreign, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	cfg.Cycle.SHM = foreign
	_, err = attachOrStart(context.Background(), cfg, quiet)
	if err == nil || !strings.Contains(err.Error(), "belongs to user 65534") {
		t.Errorf("cycle.shm of another user: %v", err)
	}
	if _, err := os.Stat(foreign); err != nil {
		t.Errorf("another user's segment was removed: %v", err)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("a cycle process was started on a planted segment")
	}
}

// TestStartCycleRefusesPlantedBusInfo plants the bus description as
// another user's file claiming some cycle PID, and as a symbolic link:
// the agent would read either as its cycle's. It refuses to start.
func TestStartCycleRefusesPlantedBusInfo(t *testing.T) {
	asRoot(t)
	dir := stickyDir(t)
	cfg := config.Default()
	cfg.Bus.Interface = "lo"
	cfg.Cycle.SHM = filepath.Join(dir, "x.shm")
	cfg.Cycle.Program = stubCycle(t, filepath.Join(t.TempDir(), "got.json"))
	forged, _ := json.Marshal(contract.BusInfo{CyclePID: os.Getpid()})
	plant(t, contract.BusInfoPath(cfg.Cycle.SHM), string(forged))

	_, err := StartCycle(context.Background(), cfg, findProgram(t, cfg), quiet, 0)
	if err == nil || !strings.Contains(err.Error(), "belongs to user 65534") {
		t.Errorf("another user's bus.json: %v", err)
	}
	if b, _ := os.ReadFile(contract.BusInfoPath(cfg.Cycle.SHM)); string(b) != string(forged) {
		t.Error("another user's file was replaced or removed")
	}
	if _, err := contract.ReadBusInfo(contract.BusInfoPath(cfg.Cycle.SHM)); err == nil {
		t.Error("ReadBusInfo read another user's file")
	}

	_ = os.Remove(contract.BusInfoPath(cfg.Cycle.SHM))
	theirs := filepath.Join(t.TempDir(), "theirs.json")
	plant(t, theirs, string(forged))
	if err := os.Chown(theirs, 0, 0); err != nil { // even a file of ours, reached through their link
		t.Fatal(err)
	}
	if err := os.Symlink(theirs, contract.BusInfoPath(cfg.Cycle.SHM)); err != nil {
		t.Fatal(err)
	}
	if _, err := StartCycle(context.Background(), cfg, findProgram(t, cfg), quiet, 0); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("bus.json a symlink: %v", err)
	}
	if _, err := contract.ReadBusInfo(contract.BusInfoPath(cfg.Cycle.SHM)); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("ReadBusInfo through a symlink: %v", err)
	}
}

// TestStartCycleWarnsOfAnUnsafeDirectory warns of a cycle.shm in a
// directory anyone may write without the sticky bit: another user could
// remove or rename the segment's files.
func TestStartCycleWarnsOfAnUnsafeDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Bus.Interface = "lo"
	cfg.Cycle.SHM = filepath.Join(dir, "x.shm")
	cfg.Cycle.Program = stubCycle(t, filepath.Join(t.TempDir(), "got.json"))
	var logged strings.Builder
	_, _ = StartCycle(context.Background(), cfg, findProgram(t, cfg), slog.New(slog.NewTextHandler(&logged, nil)), 0)
	if !strings.Contains(logged.String(), "without the sticky bit") {
		t.Errorf("no warning of a world-writable directory without the sticky bit:\n%s", logged.String())
	}
}

// TestStartCycleOnAReadOnlyDirectory mounts a read-only tmpfs where the
// segment goes: the error says so and what to do.
func TestStartCycleOnAReadOnlyDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_RDONLY, "size=64k"); err != nil {
		t.Skipf("mounting a read-only tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	cfg := config.Default()
	cfg.Cycle.SHM = filepath.Join(dir, "x.shm")
	_, err := attachOrStart(context.Background(), cfg, quiet)
	if err == nil || !strings.Contains(err.Error(), "read-only file system") || !strings.Contains(err.Error(), "mount a writable tmpfs") {
		t.Errorf("a read-only /dev/shm: %v", err)
	}
}

func TestIsCycleCommandWithConfigPipe(t *testing.T) {
	const seg = "/dev/shm/a.shm"
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"/usr/local/bin/ecagent-cycle", "--shm", seg, "--config-fd", "3"}, true},
		{[]string{"/opt/cycle", "--shm", seg, "--link-fd", "3", "--config-fd", "4", "--cycles", "9"}, true},
		{[]string{"/usr/local/bin/ecagent-cycle", "--shm", "/dev/shm/b.shm", "--config-fd", "3"}, false},
		{[]string{"/usr/local/bin/ecagent-cycle", "--shm"}, false},
	} {
		if got := isCycleCommand(c.args, seg); got != c.want {
			t.Errorf("isCycleCommand(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}

// TestSimArgs: the simulated segment serves one priority step below the
// cycle and keeps off the cycle's core when it has one.
func TestSimArgs(t *testing.T) {
	for _, tc := range []struct {
		name           string
		priority, core int
		want           string
	}{
		{"unpinned", 80, -1, "sim --link-fd 3 --log.level warn --priority 79 --devices EK1100 --devices EL1014"},
		{"pinned to 3", 80, 3, "sim --link-fd 3 --log.level warn --priority 79 --devices EK1100 --devices EL1014 --avoid-core 3"},
		{"pinned to 0", 1, 0, "sim --link-fd 3 --log.level warn --priority 1 --devices EK1100 --devices EL1014 --avoid-core 0"},
		{"normal scheduler", 0, -1, "sim --link-fd 3 --log.level warn --priority 0 --devices EK1100 --devices EL1014"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Cycle.Priority, cfg.Cycle.Core = tc.priority, tc.core
			cfg.Bus.Devices = []string{"EK1100", "EL1014"}
			if got := strings.Join(simArgs(cfg), " "); got != tc.want {
				t.Errorf("simArgs:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestAttachedCycleProcessThatEndsIsNotAlive: a cycle process the agent
// attached to after a restart is not its child. When it ends it may stay a
// zombie until whoever is its parent reaps it, and its PID may then be
// given to another process; in neither case may the agent go on showing
// the bus as running (kill(pid, 0) succeeds for both).
func TestAttachedCycleProcessThatEndsIsNotAlive(t *testing.T) {
	shmPath := filepath.Join(t.TempDir(), "bus.shm")
	// Not reaped by this test until the end: it is a zombie once killed.
	p := exec.Command("/bin/sh", "-c", "sleep 60; :", "--shm", shmPath)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Process.Kill(); _ = p.Wait() }()
	// Start returns after fork; the command line is the shell's after exec.
	for start := time.Now(); !isCycleProcess(p.Process.Pid, shmPath); time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("the shell did not start within 10 s")
		}
	}

	if _, err := openPidWatch(p.Process.Pid, filepath.Join(t.TempDir(), "other.shm")); err == nil {
		t.Error("watching a process that runs no cycle on this segment")
	}
	w, err := openPidWatch(p.Process.Pid, shmPath)
	if err != nil {
		t.Fatal(err)
	}
	cp := &CycleProcess{path: shmPath, pid: p.Process.Pid, watch: w}
	defer w.close()
	if !cp.alive() {
		t.Fatal("a running cycle process is not alive")
	}
	if err := p.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for cp.alive() {
		if time.Now().After(deadline) {
			t.Fatal("still alive 10 s after SIGKILL")
		}
		time.Sleep(time.Millisecond)
	}
	if syscall.Kill(p.Process.Pid, 0) != nil {
		t.Fatal("the process was reaped: the test no longer shows the zombie case")
	}
	if _, err := openPidWatch(p.Process.Pid, shmPath); err == nil {
		t.Error("a zombie was taken for a running cycle process")
	}
}

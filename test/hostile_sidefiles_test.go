package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// nobodyUID is the user hostile tests give planted files to.
const nobodyUID = 65534

// plantAsNobody creates path with content as a file of user nobody, mode
// 0666: what any local user can do in /dev/shm.
func plantAsNobody(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, nobodyUID, nobodyUID); err != nil {
		t.Fatal(err)
	}
}

// TestHostileSideFilesInDevShm plants, before `ecagent run`, what another
// user of the host can plant in /dev/shm beside the segment: the cycle
// configuration's old name as a symbolic link to a file of theirs, and the
// legacy configuration as a 0666 file of theirs. The agent runs its cycle
// without writing through the link (the configuration goes through a
// pipe), without writing or removing their files, on start or on stop.
func TestHostileSideFilesInDevShm(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting another user's files needs root")
	}
	path := fmt.Sprintf("/dev/shm/ecagent-hostile-%d.shm", os.Getpid())
	victim := filepath.Join(t.TempDir(), "victim")
	plantAsNobody(t, victim, "theirs")
	link, legacy := path+".cycle.json", path+".yaml"
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	plantAsNobody(t, legacy, "their yaml")
	t.Cleanup(func() { _ = os.Remove(link); _ = os.Remove(legacy) })

	a := startAgent(t, "--cycle.shm", path, "--status.interval", "0", "--metrics.listen", "", "--mqtt.password", "s3cret",
		"--bus.timeout", "100ms") // a loaded CI host answers late
	t.Cleanup(func() { _ = a.cmd.Process.Kill(); _ = a.cmd.Wait(); cyclereap.Stop(t, path) })
	a.waitLog(t, "cycle started", 30*time.Second)

	info, err := process.ReadBusInfo(process.BusInfoPath(path))
	if err != nil {
		t.Fatal(err)
	}
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", info.CyclePID))
	if args := strings.Split(string(cmdline), "\x00"); !strings.Contains(string(cmdline), "--config-fd") || strings.Contains(string(cmdline), "s3cret") {
		t.Errorf("the cycle process runs as %q: want its configuration through --config-fd", args)
	}
	check := func(when string) {
		t.Helper()
		if b, _ := os.ReadFile(victim); string(b) != "theirs" {
			t.Errorf("%s: the file the planted link points to holds %q", when, b)
		}
		if b, _ := os.ReadFile(legacy); string(b) != "their yaml" {
			t.Errorf("%s: another user's %s was replaced or removed: %q", when, legacy, b)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the planted link was replaced or removed: %v", when, err)
		}
	}
	check("running")
	stopAgent(t, a)
	check("after stop")
	if _, err := os.Lstat(path); err == nil {
		t.Error("the segment is left behind")
	}
}

// TestHostileSegmentSymlink plants cycle.shm itself as a symbolic link to
// another user's file: the agent refuses to start, says why, and leaves
// both alone.
func TestHostileSegmentSymlink(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("planting another user's files needs root")
	}
	path := fmt.Sprintf("/dev/shm/ecagent-hostile-link-%d.shm", os.Getpid())
	victim := filepath.Join(t.TempDir(), "victim")
	plantAsNobody(t, victim, "theirs")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(path) })
	out, code := runWithin(t, 20*time.Second, "run", "--cycle.shm", path, "--status.interval", "0", "--metrics.listen", "")
	if code == 0 || !strings.Contains(out, path+" is a symbolic link") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if b, _ := os.ReadFile(victim); string(b) != "theirs" {
		t.Errorf("the link's target holds %q", b)
	}
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the planted link was removed: %v", err)
	}
}

// runWithin runs ecagent with args, which must end within limit, and
// returns its output and exit code.
func runWithin(t *testing.T, limit time.Duration, args ...string) (string, int) {
	t.Helper()
	bin := ecagentBinary(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("ecagent %s still ran after %v:\n%s", strings.Join(args, " "), limit, out.String())
	}
	t.Logf("ecagent %s: %v in %v", args[0], err, time.Since(start).Round(time.Millisecond))
	return out.String(), cmd.ProcessState.ExitCode()
}

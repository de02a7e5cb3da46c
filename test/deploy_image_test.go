package test

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// staticBinary builds cmd/ecagent and cmd/ecagent-cycle the way the
// Dockerfile does — no cgo, stripped, trimmed paths — side by side, and
// returns the path of ecagent.
func staticBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ecagent-static")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "ecagent")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", dir+"/", "../cmd/ecagent", "../cmd/ecagent-cycle")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	return bin
}

// TestImageBinaryIsStaticAndRuns checks the binary the container image
// holds (it cannot be built here: no container engine): it must be static
// — no program interpreter, no shared libraries — and run the agent
// against the built-in simulated segment. As root it also runs in an
// emulation of the image: an otherwise empty, read-only root file system
// with /proc, /dev/null, a tmpfs /dev/shm and the nonroot user's /run/ecagent
// (the default cycle.shm's directory, the chart's emptyDir), as distroless's
// nonroot user, in its own PID namespace.
func TestImageBinaryIsStaticAndRuns(t *testing.T) {
	bin := staticBinary(t)
	binaries := []string{bin, filepath.Join(filepath.Dir(bin), "ecagent-cycle")}
	for _, b := range binaries {
		f, err := elf.Open(b)
		if err != nil {
			t.Fatal(err)
		}
		libs, _ := f.ImportedLibraries()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
				t.Errorf("%s has a %v program header: not static", filepath.Base(b), p.Type)
			}
		}
		f.Close()
		if len(libs) != 0 {
			t.Errorf("%s needs shared libraries %v", filepath.Base(b), libs)
		}
	}

	t.Run("on the host", func(t *testing.T) {
		shm := fmt.Sprintf("/dev/shm/ecagent-static-%d.shm", os.Getpid())
		out := runBriefly(t, exec.Command("timeout", "--preserve-status", "--signal=INT", "--kill-after=20", runFor,
			bin, "run", "--cycle.shm", shm, "--status.interval", "500ms", "--metrics.listen", "127.0.0.1:0"))
		if _, err := os.Stat(shm); err == nil {
			t.Error("segment left behind")
		}
		checkRanInOP(t, out)
	})

	t.Run("in an emulated distroless image", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root for mount and PID namespaces")
		}
		for _, tool := range []string{"unshare", "chroot", "timeout"} {
			if _, err := exec.LookPath(tool); err != nil {
				t.Skipf("needs %s", tool)
			}
		}
		root := t.TempDir()
		for _, d := range []string{"usr/local/bin", "proc", "dev/shm", "etc", "run/ecagent"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for _, b := range binaries {
			data, err := os.ReadFile(b)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, "usr/local/bin", filepath.Base(b)), data, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// distroless/static's passwd entry for nonroot.
		if err := os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, "dev/null"), nil, 0o666); err != nil {
			t.Fatal(err)
		}
		script := strings.Join([]string{
			"set -e",
			// Read-only root first (readOnlyRootFilesystem), then what the
			// runtime mounts on top of it.
			"mount --bind " + root + " " + root,
			"mount -o remount,bind,ro " + root,
			"mount -t proc proc " + root + "/proc",
			"mount -t tmpfs -o size=64m,mode=1777 tmpfs " + root + "/dev/shm",
			// The default cycle.shm's directory: the image's, the
			// nonroot user's (the chart mounts an in-memory emptyDir).
			"mount -t tmpfs -o size=64m,mode=0750,uid=65532,gid=65532 tmpfs " + root + "/run/ecagent",
			"mount --bind /dev/null " + root + "/dev/null",
			// A container runtime's default locked-memory limit (or the
			// hard limit, where that is lower and may not be raised).
			`ulimit -l 8192 2>/dev/null || ulimit -l "$(ulimit -H -l)"`,
			"exec timeout --preserve-status --signal=INT --kill-after=20 " + runFor + " chroot --userspec=65532:65532 " + root +
				" /usr/local/bin/ecagent run --status.interval 500ms --metrics.listen 127.0.0.1:0",
		}, "\n")
		out := runBriefly(t, exec.Command("unshare", "--mount", "--pid", "--fork", "--propagation", "private", "sh", "-c", script))
		checkRanInOP(t, out)
		// Without capabilities it runs, and says what it could not do: no
		// SCHED_FIFO, and under the finite RLIMIT_MEMLOCK no locking
		// of memory mapped later (which would end the cycle process at its
		// first heap growth past the limit).
		for _, setting := range []string{"sched_fifo", "mlock"} {
			if !strings.Contains(out, "real-time setting refused") || !strings.Contains(out, "setting="+setting) {
				t.Errorf("the refused %s is not reported:\n%s", setting, out)
			}
		}
	})
}

// runFor is how long runBriefly's commands let the agent run (timeout(1)
// then sends SIGINT): long enough for bring-up and a few status lines on
// a loaded CI machine.
const runFor = "3"

// runBriefly runs cmd (which stops the agent with SIGINT after runFor
// seconds) and returns its output; the agent must exit 130, the exit code
// of an interrupted run (and of nothing else).
func runBriefly(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the agent did not stop within 60 s:\n%s", out)
	}
	if code := exitCode(err); code != 130 {
		t.Fatalf("%s: exit code %d (%v), want 130 (interrupted)\n%s", strings.Join(cmd.Args, " "), code, err, out)
	}
	return string(out)
}

// exitCode is the exit code of a finished command's error: 0 for nil, -1
// when it did not exit (it could not start, or a signal ended it).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// checkRanInOP wants a status line showing the simulated reference
// segment in OP with cycles counted.
func checkRanInOP(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " OP  slaves 7 ") && !strings.Contains(line, "cycles 0 ") {
			t.Logf("%s", line)
			return
		}
	}
	t.Errorf("no status line with the segment in OP:\n%s", out)
}

// TestDockerfile pins what the image promises and the test above relies
// on: a multi-stage build whose binaries are built like staticBinary, a
// distroless/static (or scratch) final stage, a non-root user, the agent
// where the chart's NOTES and the README say it is and its cycle program
// beside it.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var froms []string
	var user, entrypoint string
	var build string
	var copies []string
	for _, line := range strings.Split(strings.ReplaceAll(string(b), "\\\n", " "), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			froms = append(froms, line)
		case "USER":
			user = fields[1]
		case "ENTRYPOINT":
			entrypoint = line
		case "COPY":
			copies = append(copies, line)
		case "RUN":
			if strings.Contains(line, "go build") {
				build = line
			}
		}
	}
	if len(froms) < 2 {
		t.Errorf("want a multi-stage build, have FROM lines %q", froms)
	} else if last := froms[len(froms)-1]; !strings.Contains(last, "distroless/static") && !strings.Contains(last, "scratch") {
		t.Errorf("final stage %q is neither distroless/static nor scratch", last)
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("USER %q: the image must default to a non-root user", user)
	}
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags="-s -w"`, "./cmd/ecagent ", "./cmd/ecagent-cycle"} {
		if !strings.Contains(build, want) {
			t.Errorf("the go build step %q lacks %s (test/deploy_image_test.go builds with it)", build, want)
		}
	}
	if !strings.Contains(entrypoint, `"/usr/local/bin/ecagent"`) {
		t.Errorf("ENTRYPOINT %q: the binary must be /usr/local/bin/ecagent", entrypoint)
	}
	// The agent finds ecagent-cycle beside itself (cycle.program empty).
	installed := false
	for _, c := range copies {
		if strings.Contains(c, "--from=") && strings.Contains(c, "ecagent-cycle") &&
			(strings.HasSuffix(c, " /usr/local/bin/") || strings.HasSuffix(c, " /usr/local/bin/ecagent-cycle")) {
			installed = true
		}
	}
	if !installed {
		t.Errorf("no COPY puts ecagent-cycle into /usr/local/bin beside the agent: %q", copies)
	}
}

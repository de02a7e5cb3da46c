// Package cyclereap stops the cycle processes that tests leave behind.
//
// A cycle process runs in its own session so that it outlives an agent
// that crashes; a test whose agent is killed, hangs or is abandoned on a
// failure path therefore leaves it running (once for 1 h 43 min). [Stop]
// stops the one serving a segment, found by its segment's path, whatever
// became of its agent; a test registers it before anything can fail.
// [Mark] and [Check] make a package's TestMain fail when, its tests done,
// a cycle process it started still runs: the proof that every path
// reaped.
package cyclereap

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/cycle/maintenance"
)

// ownerEnv names the variable that marks the processes a test binary
// started, their children included: its value is the binary's PID.
const ownerEnv = "ECAGENT_TEST_OWNER"

// stopGrace is how long Stop lets a cycle process take its bus to INIT
// after SIGTERM before it kills it.
const stopGrace = 5 * time.Second

// Process is a running process.
type Process struct {
	PID  int
	Args []string // its command line
}

func (p Process) String() string { return fmt.Sprintf("pid %d: %s", p.PID, strings.Join(p.Args, " ")) }

// Mark puts this test binary's mark in its environment: every process it
// starts from then on inherits it, and their children (the cycle process
// of an agent) from them. Call it in TestMain before m.Run. A command
// given an environment of its own gets the mark through [Env].
func Mark() {
	_ = os.Setenv(ownerEnv, strconv.Itoa(os.Getpid()))
}

// Env returns env with this binary's mark added, for a command given an
// environment of its own (exec.Cmd.Env); a nil env, which inherits this
// process's, is returned as it is.
func Env(env []string) []string {
	if env == nil {
		return nil
	}
	mark := ownerEnv + "=" + strconv.Itoa(os.Getpid())
	if slices.Contains(env, mark) {
		return env
	}
	return append(slices.Clip(env), mark)
}

// Stop stops every cycle process serving the segment at shmPath (found by
// its command line, `… --shm <shmPath> …`, and by the PID in the
// segment's bus description): SIGTERM, then SIGKILL after stopGrace. The
// simulator of a simulated segment ends with it. It then removes the
// segment and the files beside it, the agent's lock too (an agent the test
// killed leaves its lock file; the lock itself went with the process). It is a no-op when none runs: a test
// registers it as a cleanup before it starts the agent.
func Stop(tb testing.TB, shmPath string) {
	tb.Helper()
	procs := Find(shmPath)
	for _, p := range procs {
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
	}
	deadline := time.Now().Add(stopGrace)
	for _, p := range procs {
		for Running(p.PID) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if Running(p.PID) {
			tb.Logf("cycle process %v did not stop on SIGTERM within %v: killed", p, stopGrace)
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			for end := time.Now().Add(2 * time.Second); Running(p.PID) && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	for _, p := range append([]string{shmPath, maintenance.SocketPath(shmPath), maintenance.SocketDir(shmPath), contract.AgentLockPath(shmPath)}, contract.SideFiles(shmPath)...) {
		_ = os.Remove(p)
	}
}

// Find returns the running cycle processes on the segment at shmPath.
func Find(shmPath string) []Process {
	var out []Process
	for _, p := range processes() {
		if servesSegment(p.Args, shmPath) {
			out = append(out, p)
		}
	}
	// A cycle process's bus description names it, whatever its command
	// line (a program of another name, a configuration file).
	if info, err := contract.ReadBusInfo(contract.BusInfoPath(shmPath)); err == nil && info.CyclePID > 0 &&
		!slices.ContainsFunc(out, func(p Process) bool { return p.PID == info.CyclePID }) {
		if args := cmdline(info.CyclePID); slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, shmPath) }) && Running(info.CyclePID) {
			out = append(out, Process{PID: info.CyclePID, Args: args})
		}
	}
	return out
}

// Survivors returns the cycle processes this binary started (those
// carrying its mark, see [Mark]) that still run.
func Survivors() []Process {
	mark := []byte(ownerEnv + "=" + strconv.Itoa(os.Getpid()) + "\x00")
	var out []Process
	for _, p := range processes() {
		if !slices.ContainsFunc(p.Args, isSHMFlag) {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.PID))
		if err == nil && bytes.Contains(append([]byte{0}, env...), append([]byte{0}, mark...)) {
			out = append(out, p)
		}
	}
	return out
}

// Check is for TestMain, after m.Run returned code: it gives the cycle
// processes this binary started up to grace to end, then writes each that
// still runs to w, kills it, and returns 1; else it returns code.
func Check(w io.Writer, code int, grace time.Duration) int {
	left := Survivors()
	for deadline := time.Now().Add(grace); len(left) > 0 && time.Now().Before(deadline); left = Survivors() {
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) == 0 {
		return code
	}
	fmt.Fprintf(w, "FAIL: %d cycle process(es) started by these tests still run after them (a test did not reap it on some path; register cyclereap.Stop before anything can fail):\n", len(left))
	for _, p := range left {
		fmt.Fprintf(w, "\t%v\n", p)
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	return 1
}

// servesSegment reports whether args is the command line of a cycle
// process on the segment at shmPath (`… --shm <shmPath> …`, or
// --shm=<shmPath>).
func servesSegment(args []string, shmPath string) bool {
	for i, a := range args {
		if a == "--shm="+shmPath || (a == "--shm" && i+1 < len(args) && args[i+1] == shmPath) {
			return true
		}
	}
	return false
}

// isSHMFlag reports whether a is the cycle program's segment flag.
func isSHMFlag(a string) bool { return a == "--shm" || strings.HasPrefix(a, "--shm=") }

// processes returns the processes that run now, this one excepted, with
// their command lines; zombies (they have none) are left out.
func processes() []Process {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	self := os.Getpid()
	var out []Process
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == self {
			continue
		}
		if args := cmdline(pid); len(args) > 0 {
			out = append(out, Process{PID: pid, Args: args})
		}
	}
	return out
}

// cmdline returns the command line of pid, empty for a zombie or a
// process gone.
func cmdline(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// Running reports whether pid runs: it exists and is no zombie (a zombie
// still answers signal 0 until its parent reaps it).
func Running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state …: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

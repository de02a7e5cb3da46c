package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/cycle/process"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// unprivilegedUID is the user the test runs the agent as: not root, in no
// group, present in no passwd file (the kernel needs none).
const unprivilegedUID = 64123

// linux capability numbers of the unit's capabilities (linux/capability.h).
var capabilityBits = map[string]uint{"CAP_NET_RAW": 13, "CAP_IPC_LOCK": 14, "CAP_SYS_NICE": 23}

// TestAgentRunsWithOnlyTheUnitsPrivileges starts `ecagent run` the way
// deploy/systemd/ecagent.service does — a non-root user, the unit's
// capabilities as ambient and bounding set, its LimitRTPRIO and
// LimitMEMLOCK, no new privileges — against a simulated segment on a veth
// pair, and shows that it reaches OP with the cycle thread in SCHED_FIFO
// and its memory locked. The control case takes CAP_SYS_NICE and the
// RT-priority limit away: the agent must still reach OP, without
// SCHED_FIFO, and say so.
func TestAgentRunsWithOnlyTheUnitsPrivileges(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"setpriv", "prlimit"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian package util-linux)", tool)
		}
	}
	u := readUnitSettings(t, unitFile)
	caps := strings.Fields(u.one(t, "Service.AmbientCapabilities"))
	if bounding := strings.Fields(u.one(t, "Service.CapabilityBoundingSet")); strings.Join(bounding, " ") != strings.Join(caps, " ") {
		t.Fatalf("the test assumes ambient = bounding capabilities; unit has %v and %v", caps, bounding)
	}
	bin := binaryForAnyUser(t)

	for _, tc := range []struct {
		name, tag string
		caps      []string
		rtprio    string
		wantFIFO  bool
	}{
		{"unit privileges", "capu", caps, u.one(t, "Service.LimitRTPRIO"), true},
		{"without CAP_SYS_NICE or RLIMIT_RTPRIO", "capn", without(caps, "CAP_SYS_NICE"), "0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(t, tc.tag)
			startSim(t, w, strings.Join(referenceSet, ","))
			// The unit's RuntimeDirectory: owned by the service user, 0750.
			runDir := filepath.Join("/dev/shm", fmt.Sprintf("ecagent-%s-%d", tc.tag, os.Getpid()))
			if err := os.Mkdir(runDir, 0o750); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(runDir) })
			if err := os.Chown(runDir, unprivilegedUID, unprivilegedUID); err != nil {
				t.Fatal(err)
			}
			shmPath := filepath.Join(runDir, "ecagent.shm")
			addr := testsupport.FreeAddr(t)

			memlock := reachableLimit(t, "RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK, u.one(t, "Service.LimitMEMLOCK"))
			rtprio := reachableLimit(t, "RLIMIT_RTPRIO", unix.RLIMIT_RTPRIO, tc.rtprio)
			capList := capsForSetpriv(tc.caps)
			args := []string{
				"--rtprio=" + rtprio, "--memlock=" + memlock, "--",
				"setpriv", "--reuid", strconv.Itoa(unprivilegedUID), "--regid", strconv.Itoa(unprivilegedUID), "--clear-groups",
				"--inh-caps", capList, "--ambient-caps", capList, "--bounding-set", capList,
			}
			if u.one(t, "Service.NoNewPrivileges") == "yes" {
				args = append(args, "--no-new-privs")
			}
			args = append(args, "--", bin, "run", "--bus.interface", w.MasterEnd, "--bus.expectedslaves", "7",
				"--cycle.shm", shmPath, "--status.interval", "300ms", "--metrics.listen", addr)
			a := startProcess(t, exec.Command("prlimit", args...))
			exited := make(chan struct{})
			go func() { _ = a.cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				_ = a.cmd.Process.Signal(syscall.SIGTERM)
				<-exited
				if t.Failed() {
					t.Logf("agent log:\n%s", a.log())
				}
			})

			deadline := time.Now().Add(30 * time.Second)
			for !strings.Contains(a.out(), " OP  slaves 7 ") {
				if time.Now().After(deadline) || closed(exited) {
					t.Fatalf("the agent did not report OP with 7 slaves:\n%s\nlog:\n%s", a.out(), a.log())
				}
				time.Sleep(50 * time.Millisecond)
			}
			// The bus description belongs to the unit's user; the test,
			// root, reads it as a file (ReadBusInfo refuses another user's,
			// as the agent must).
			raw, err := os.ReadFile(process.BusInfoPath(shmPath))
			if err != nil {
				t.Fatal(err)
			}
			info := new(process.BusInfo)
			if err := json.Unmarshal(raw, info); err != nil {
				t.Fatal(err)
			}
			// Both processes run as the user, with exactly the capabilities given.
			want := capMask(tc.caps)
			for name, pid := range map[string]int{"agent": a.cmd.Process.Pid, "cycle": info.CyclePID} {
				st := procStatus(t, pid)
				if uid := strings.Fields(st["Uid"]); len(uid) != 4 || uid[1] != strconv.Itoa(unprivilegedUID) {
					t.Errorf("%s process %d runs as uid %v", name, pid, uid)
				}
				for _, set := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
					if got, _ := strconv.ParseUint(st[set], 16, 64); got != want {
						t.Errorf("%s process %s = %#x, want %#x (%v)", name, set, got, want, tc.caps)
					}
				}
			}
			fifo := fifoThreads(t, info.CyclePID)
			t.Logf("cycle process %d: SCHED_FIFO threads %v; RT settings %+v", info.CyclePID, fifo, info.RT)
			applied := map[string]bool{}
			for _, r := range info.RT {
				applied[r.Setting] = r.Applied
			}
			if tc.wantFIFO {
				// The cycle thread, and the recovery worker's thread one
				// below it (it uses the turns the cycle lends).
				if slices.Sort(fifo); !slices.Equal(fifo, []int{79, 80}) {
					t.Errorf("want two SCHED_FIFO threads, the cycle at priority 80 and the recovery worker at 79; have priorities %v", fifo)
				}
				if !applied["sched_fifo"] || !applied["mlock"] {
					t.Errorf("the cycle reports sched_fifo %v, mlock %v; want both applied", applied["sched_fifo"], applied["mlock"])
				}
			} else {
				if len(fifo) != 0 {
					t.Errorf("SCHED_FIFO threads %v without CAP_SYS_NICE or RLIMIT_RTPRIO", fifo)
				}
				if applied["sched_fifo"] || !strings.Contains(a.log(), "real-time setting refused") {
					t.Errorf("the refused SCHED_FIFO is not reported (applied %v)", applied["sched_fifo"])
				}
			}
			wantReady(t, addr)

			// A normal stop: the cycle stops and the user's segment is removed.
			_ = a.cmd.Process.Signal(syscall.SIGTERM)
			<-exited
			if !a.cmd.ProcessState.Success() {
				t.Errorf("agent exit: %v", a.cmd.ProcessState)
			}
			time.Sleep(100 * time.Millisecond)
			if syscall.Kill(info.CyclePID, 0) == nil {
				t.Errorf("cycle process %d still runs after the agent stopped", info.CyclePID)
			}
			if _, err := os.Stat(shmPath); err == nil {
				t.Error("segment left behind")
			}
		})
	}
}

// binaryForAnyUser copies the ecagent binary and its cycle program to a
// directory every user may enter (the build directory is root's alone)
// and returns the path of ecagent.
func binaryForAnyUser(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "ecagent-caps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{ecagentBinary(t), cycleBinary(t)} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "ecagent")
}

// startProcess starts cmd with its output in files (the cycle process
// inherits them and may outlive it; see agentProc), in an environment of
// PATH alone unless cmd.Env is set.
func startProcess(t *testing.T, cmd *exec.Cmd) *agentProc {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	}
	return startWithFiles(t, cmd)
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// reachableLimit returns the prlimit(1) argument (soft:hard) for a unit's
// Limit*= value, lowered to this process's hard limit when the host does
// not let the test raise it (no CAP_SYS_RESOURCE, as in some CI
// containers). The unit's capabilities make the limits moot; they matter
// only to a drop-in that removes CAP_SYS_NICE or CAP_IPC_LOCK.
func reachableLimit(t *testing.T, name string, resource int, unitValue string) string {
	t.Helper()
	want := uint64(unix.RLIM_INFINITY)
	if unitValue != "infinity" {
		n, err := strconv.ParseUint(unitValue, 10, 64)
		if err != nil {
			t.Fatalf("limit %q: %v", unitValue, err)
		}
		want = n
	}
	var have unix.Rlimit
	if err := unix.Getrlimit(resource, &have); err != nil {
		t.Fatal(err)
	}
	if want > have.Max && !hasCapability(t, capSysResource) {
		t.Logf("cannot raise %s to the unit's %s here (hard limit %d, no CAP_SYS_RESOURCE); using %d",
			name, unitValue, have.Max, have.Max)
		want = have.Max
	}
	v := "unlimited"
	if want != unix.RLIM_INFINITY {
		v = strconv.FormatUint(want, 10)
	}
	return v + ":" + v
}

const capSysResource = 24

// hasCapability reports whether the test process has capability bit in
// its effective set.
func hasCapability(t *testing.T, bit uint) bool {
	t.Helper()
	eff, err := strconv.ParseUint(procStatus(t, os.Getpid())["CapEff"], 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return eff&(1<<bit) != 0
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// capsForSetpriv turns CAP_NET_RAW CAP_SYS_NICE into -all,+net_raw,+sys_nice.
func capsForSetpriv(caps []string) string {
	s := "-all"
	for _, c := range caps {
		s += ",+" + strings.ToLower(strings.TrimPrefix(c, "CAP_"))
	}
	return s
}

func capMask(caps []string) uint64 {
	var m uint64
	for _, c := range caps {
		m |= 1 << capabilityBits[c]
	}
	return m
}

// procStatus reads /proc/PID/status as field → value.
func procStatus(t *testing.T, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// fifoThreads returns the RT priorities of the process's SCHED_FIFO
// threads, from /proc/PID/task/TID/stat (fields 40 rt_priority and 41
// policy; SCHED_FIFO is 1).
func fifoThreads(t *testing.T, pid int) []int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var prios []int
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			continue // the thread exited
		}
		// The command name may hold spaces and parentheses: fields
		// start after the last ')', with field 3 (state) first.
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) < 39 {
			t.Fatalf("short stat line for task %s: %q", task.Name(), s)
		}
		prio, _ := strconv.Atoi(fields[40-3])
		policy, _ := strconv.Atoi(fields[41-3])
		if policy == 1 {
			prios = append(prios, prio)
		}
	}
	return prios
}

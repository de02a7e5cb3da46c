package test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// forensicsDropIn is the unit's example drop-in that grants the agent
// CAP_SYS_ADMIN for tracefs.
const forensicsDropIn = "../deploy/systemd/examples/forensics.conf"

// TestCycleProcessHoldsOnlyWhatItNeeds starts `ecagent run` as root — every
// capability, CAP_SYS_ADMIN among them, as an agent without the unit has
// them — and reads the capability sets of the cycle process it starts from
// /proc/PID/status: each set (effective, permitted, inheritable, ambient,
// bounding) must be exactly what the configuration needs
// (contract.Config.Capabilities), CAP_SYS_ADMIN in none, with
// no_new_privs so nothing it executes gains more, while the agent keeps
// what it holds. The configurations: a raw link (CAP_NET_RAW,
// CAP_SYS_NICE, CAP_IPC_LOCK), the default link auto (xdp may be tried:
// CAP_NET_ADMIN and CAP_BPF besides), and the built-in simulated segment
// (no packet socket: no CAP_NET_RAW), whose simulator process holds
// CAP_SYS_NICE alone. The cycle process says what it holds in one line.
func TestCycleProcessHoldsOnlyWhatItNeeds(t *testing.T) {
	needRoot(t)
	if !hasCapability(t, uint(contract.CapSysAdmin)) {
		t.Skip("the test process lacks CAP_SYS_ADMIN: nothing to keep from the cycle process")
	}
	self, err := contract.ReadProcessCaps(0)
	if err != nil {
		t.Fatal(err)
	}
	base := contract.CapsOf(contract.CapSysNice, contract.CapIPCLock)
	for _, tc := range []struct {
		name, tag, link string
		want            contract.Caps
	}{
		{"raw link", "cpr", "raw", base | contract.CapsOf(contract.CapNetRaw)},
		{"link auto", "cpa", "auto", base | contract.CapsOf(contract.CapNetRaw, contract.CapNetAdmin, contract.CapBPF)},
		{"simulated segment", "", "", base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join("/dev/shm", fmt.Sprintf("ecagent-caps-%s%d.shm", tc.tag, os.Getpid()))
			args := []string{"--cycle.shm", path, "--status.interval", "300ms", "--metrics.listen", testsupport.FreeAddr(t)}
			if tc.tag != "" {
				w := newWire(t, tc.tag)
				startSim(t, w, strings.Join(referenceSet, ","))
				args = append(args, "--bus.interface", w.MasterEnd, "--bus.link", tc.link, "--bus.expectedslaves", "7")
			}
			a := startAgent(t, args...)
			stopAgentAtCleanup(t, a)
			a.waitStatus(t, " OP  slaves 7 ", 30*time.Second)
			info := readBusInfo(t, path)
			want := tc.want & self.Permitted
			checkCycleCaps(t, info.CyclePID, want, want)
			wantCapsLine(t, a, want)
			if agent := procCaps(t, a.cmd.Process.Pid); !agent.Effective.Has(contract.CapSysAdmin) || agent.NoNewPrivs {
				t.Errorf("the agent's own capabilities changed: effective %v, no_new_privs %v", agent.Effective, agent.NoNewPrivs)
			}
			if tc.tag == "" {
				simPID := childRunning(t, a.cmd.Process.Pid, "sim")
				sim := procCaps(t, simPID)
				nice := contract.CapsOf(contract.CapSysNice)
				for set, got := range map[string]contract.Caps{"effective": sim.Effective, "permitted": sim.Permitted,
					"inheritable": sim.Inheritable, "ambient": sim.Ambient, "bounding": sim.Bounding} {
					if got != nice {
						t.Errorf("simulator process %d: %s set %v, want %v", simPID, set, got, nice)
					}
				}
			}
		})
	}
}

// TestCycleProcessOfTheForensicsUnit runs `ecagent run` as the unit with
// the forensics drop-in does — a non-root user with the unit's
// capabilities and CAP_SYS_ADMIN, ambient and bounding, no new privileges
// — and shows that the cycle process holds the unit's capabilities in
// every set but the bounding one, and CAP_SYS_ADMIN in none of them: the
// agent holds no CAP_SETPCAP to narrow a bounding set, and none is needed,
// since no_new_privs keeps every execve from gaining anything through it.
func TestCycleProcessOfTheForensicsUnit(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"setpriv", "prlimit"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian package util-linux)", tool)
		}
	}
	u := readUnitSettings(t, unitFile)
	d := readUnitSettings(t, forensicsDropIn)
	unitCaps := strings.Fields(u.one(t, "Service.AmbientCapabilities"))
	caps := append(unitCaps, strings.Fields(d.one(t, "Service.AmbientCapabilities"))...)
	if bounding := d.one(t, "Service.CapabilityBoundingSet"); bounding != "CAP_SYS_ADMIN" {
		t.Fatalf("the test assumes the drop-in adds CAP_SYS_ADMIN to both sets; its bounding set adds %q", bounding)
	}
	bin := binaryForAnyUser(t)
	w := newWire(t, "cpu")
	startSim(t, w, strings.Join(referenceSet, ","))
	runDir := filepath.Join("/dev/shm", fmt.Sprintf("ecagent-cpu-%d", os.Getpid()))
	if err := os.Mkdir(runDir, 0o750); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runDir) })
	if err := os.Chown(runDir, unprivilegedUID, unprivilegedUID); err != nil {
		t.Fatal(err)
	}
	shmPath := filepath.Join(runDir, "ecagent.shm")
	capList := capsForSetpriv(caps)
	cmd := exec.Command("prlimit",
		"--rtprio="+reachableLimit(t, "RLIMIT_RTPRIO", unix.RLIMIT_RTPRIO, u.one(t, "Service.LimitRTPRIO")),
		"--memlock="+reachableLimit(t, "RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK, u.one(t, "Service.LimitMEMLOCK")), "--",
		"setpriv", "--reuid", strconv.Itoa(unprivilegedUID), "--regid", strconv.Itoa(unprivilegedUID), "--clear-groups",
		"--inh-caps", capList, "--ambient-caps", capList, "--bounding-set", capList, "--no-new-privs",
		"--", bin, "run", "--bus.interface", w.MasterEnd, "--bus.expectedslaves", "7",
		"--cycle.shm", shmPath, "--status.interval", "300ms", "--metrics.listen", testsupport.FreeAddr(t))
	a := startProcess(t, cmd)
	stopAgentAtCleanup(t, a)
	a.waitStatus(t, " OP  slaves 7 ", 30*time.Second)
	// The bus description belongs to the unit's user: read as a file.
	raw, err := os.ReadFile(contract.BusInfoPath(shmPath))
	if err != nil {
		t.Fatal(err)
	}
	var info contract.BusInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	agent := procCaps(t, a.cmd.Process.Pid)
	if !agent.Effective.Has(contract.CapSysAdmin) {
		t.Fatalf("the agent does not hold CAP_SYS_ADMIN (effective %v): the test shows nothing", agent.Effective)
	}
	var want contract.Caps
	for _, c := range unitCaps {
		want |= capsByName(t, c)
	}
	checkCycleCaps(t, info.CyclePID, want, agent.Bounding)
	wantCapsLine(t, a, want)
}

// checkCycleCaps fails t unless the cycle process pid holds exactly want
// in its effective, permitted, inheritable and ambient sets and bounding
// in its bounding set, CAP_SYS_ADMIN in none but a bounding set given,
// and runs with no_new_privs.
func checkCycleCaps(t *testing.T, pid int, want, bounding contract.Caps) {
	t.Helper()
	pc := procCaps(t, pid)
	t.Logf("cycle process %d: effective %v, permitted %v, inheritable %v, ambient %v, bounding %v, no_new_privs %v",
		pid, pc.Effective, pc.Permitted, pc.Inheritable, pc.Ambient, pc.Bounding, pc.NoNewPrivs)
	for set, got := range map[string]contract.Caps{"effective": pc.Effective, "permitted": pc.Permitted,
		"inheritable": pc.Inheritable, "ambient": pc.Ambient} {
		if got != want {
			t.Errorf("cycle process %d: %s set %v, want %v", pid, set, got, want)
		}
		if got.Has(contract.CapSysAdmin) {
			t.Errorf("cycle process %d holds CAP_SYS_ADMIN in its %s set", pid, set)
		}
	}
	if pc.Bounding != bounding {
		t.Errorf("cycle process %d: bounding set %v, want %v", pid, pc.Bounding, bounding)
	}
	if !pc.NoNewPrivs {
		t.Errorf("cycle process %d runs without no_new_privs: an execve could gain what its bounding set holds", pid)
	}
}

// wantCapsLine fails t unless the cycle process logged, once, that it
// holds want and needs nothing more.
func wantCapsLine(t *testing.T, a *agentProc, want contract.Caps) {
	t.Helper()
	line := fmt.Sprintf("msg=capabilities process=cycle effective=%v ", want)
	if n := strings.Count(a.log(), line); n != 1 {
		t.Errorf("want the cycle process's capabilities logged once as %q, found %d times:\n%s", line, n, a.log())
	}
}

func procCaps(t *testing.T, pid int) contract.ProcessCaps {
	t.Helper()
	pc, err := contract.ReadProcessCaps(pid)
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

// capsByName returns the set of the capability named as in a unit file.
func capsByName(t *testing.T, name string) contract.Caps {
	t.Helper()
	for c := range contract.Capability(64) {
		if c.String() == name {
			return contract.CapsOf(c)
		}
	}
	t.Fatalf("unknown capability %q", name)
	return 0
}

// readBusInfo reads the bus description beside the segment at path.
func readBusInfo(t *testing.T, path string) *contract.BusInfo {
	t.Helper()
	info, err := contract.ReadBusInfo(contract.BusInfoPath(path))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// childRunning returns the PID of the child of parent whose command line
// has word as its second argument (ecagent sim …).
func childRunning(t *testing.T, parent int, word string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil || !strings.Contains(string(st), fmt.Sprintf("\nPPid:\t%d\n", parent)) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if args := strings.Split(string(cmdline), "\x00"); len(args) > 1 && args[1] == word {
			return pid
		}
	}
	t.Fatalf("no child %q of process %d", word, parent)
	return 0
}

// stopAgentAtCleanup stops the agent when the test ends (SIGTERM, which
// stops its cycle process too) and logs its output if the test failed.
func stopAgentAtCleanup(t *testing.T, a *agentProc) {
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		_ = a.cmd.Wait()
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log())
		}
	})
}

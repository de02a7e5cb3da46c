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
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
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

// TestCycleProcessOfTheForensicsDeployments runs `ecagent run` as the two
// deployments with forensics on run it, both granting the agent
// CAP_SYS_ADMIN for tracefs, neither CAP_SETPCAP: the systemd unit with
// the forensics drop-in (a non-root user, the unit's capabilities and
// CAP_SYS_ADMIN ambient and bounding, no new privileges) and the Helm
// chart's container with forensics.enabled (uid 0, every capability
// dropped but the chart's and SYS_ADMIN, allowPrivilegeEscalation false).
// The cycle process must hold what it needs of those in every set but the
// bounding one, CAP_SYS_ADMIN in none of them, with no_new_privs: without
// CAP_SETPCAP no bounding set can be narrowed, and none need be, since
// no_new_privs keeps every execve from gaining anything through it — the
// container's root, whose execve would otherwise take its whole bounding
// set, CAP_SYS_ADMIN included, most of all.
func TestCycleProcessOfTheForensicsDeployments(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"setpriv", "prlimit"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian package util-linux)", tool)
		}
	}
	u := readUnitSettings(t, unitFile)
	d := readUnitSettings(t, forensicsDropIn)
	unitCaps := strings.Fields(u.one(t, "Service.AmbientCapabilities"))
	if bounding := d.one(t, "Service.CapabilityBoundingSet"); bounding != d.one(t, "Service.AmbientCapabilities") {
		t.Fatalf("the test assumes the drop-in adds the same to both sets; it adds %q and %q", d.one(t, "Service.AmbientCapabilities"), bounding)
	}
	chartCaps := chartCapabilities(t)
	for _, tc := range []struct {
		name, tag string
		uid       int
		caps      []string // the agent's
		need      []string // what the cycle needs of them
	}{
		{"systemd unit and forensics.conf", "cpu", unprivilegedUID, append(slices.Clone(unitCaps), strings.Fields(d.one(t, "Service.AmbientCapabilities"))...), unitCaps},
		// The chart's template adds SYS_ADMIN with forensics.enabled.
		{"Helm chart, forensics.enabled", "cph", 0, append(slices.Clone(chartCaps), "CAP_SYS_ADMIN"), chartCaps},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(t, tc.tag)
			startSim(t, w, strings.Join(referenceSet, ","))
			a, shmPath := startAgentAs(t, w, tc.tag, tc.uid, tc.caps, u)
			a.waitStatus(t, " OP  slaves 7 ", 30*time.Second)
			// The bus description belongs to the agent's user: read as a file.
			raw, err := os.ReadFile(contract.BusInfoPath(shmPath))
			if err != nil {
				t.Fatal(err)
			}
			var info contract.BusInfo
			if err := json.Unmarshal(raw, &info); err != nil {
				t.Fatal(err)
			}
			agent := procCaps(t, a.cmd.Process.Pid)
			if !agent.Effective.Has(contract.CapSysAdmin) || agent.Bounding.Has(contract.CapSetPCAP) {
				t.Fatalf("the agent holds %v, bounding %v: want CAP_SYS_ADMIN and no CAP_SETPCAP, or the test shows nothing", agent.Effective, agent.Bounding)
			}
			var want contract.Caps
			for _, c := range tc.need {
				want |= capsByName(t, c)
			}
			checkCycleCaps(t, info.CyclePID, want, agent.Bounding)
			wantCapsLine(t, a, want)
		})
	}
}

// startAgentAs starts `ecagent run` on the wire as uid with caps, as the
// unit u does (its limits, no new privileges) or a container: uid 0 holds
// caps as its bounding set, which its execve makes its permitted and
// effective ones, another uid as its ambient set. It returns the agent and
// its segment's path, in a directory of uid's own.
func startAgentAs(t *testing.T, w wire, tag string, uid int, caps []string, u unitSettings) (*agentProc, string) {
	t.Helper()
	bin := binaryForAnyUser(t)
	runDir := filepath.Join("/dev/shm", fmt.Sprintf("ecagent-%s-%d", tag, os.Getpid()))
	if err := os.Mkdir(runDir, 0o750); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runDir) })
	if err := os.Chown(runDir, uid, uid); err != nil {
		t.Fatal(err)
	}
	shmPath := filepath.Join(runDir, "ecagent.shm")
	capList := capsForSetpriv(caps)
	args := []string{
		"--rtprio=" + reachableLimit(t, "RLIMIT_RTPRIO", unix.RLIMIT_RTPRIO, u.one(t, "Service.LimitRTPRIO")),
		"--memlock=" + reachableLimit(t, "RLIMIT_MEMLOCK", unix.RLIMIT_MEMLOCK, u.one(t, "Service.LimitMEMLOCK")), "--", "setpriv"}
	if uid != 0 {
		args = append(args, "--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(uid), "--clear-groups",
			"--inh-caps", capList, "--ambient-caps", capList)
	}
	args = append(args, "--bounding-set", capList, "--no-new-privs", "--", bin, "run", "--bus.interface", w.MasterEnd,
		"--bus.expectedslaves", "7", "--cycle.shm", shmPath, "--status.interval", "300ms", "--metrics.listen", testsupport.FreeAddr(t))
	a := startProcess(t, exec.Command("prlimit", args...))
	stopAgentAtCleanup(t, a)
	return a, shmPath
}

// chartCapabilities returns the capabilities the Helm chart's values add
// to the container (securityContext.capabilities.add), as CAP_ names.
func chartCapabilities(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../helm/ecagent/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		SecurityContext struct {
			RunAsUser    int `yaml:"runAsUser"`
			Capabilities struct {
				Drop []string `yaml:"drop"`
				Add  []string `yaml:"add"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
	}
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	sc := v.SecurityContext
	if sc.RunAsUser != 0 || !slices.Equal(sc.Capabilities.Drop, []string{"ALL"}) || len(sc.Capabilities.Add) == 0 {
		t.Fatalf("the test assumes the chart runs uid 0 with ALL dropped and some added; values have %+v", sc)
	}
	var caps []string
	for _, c := range sc.Capabilities.Add {
		caps = append(caps, "CAP_"+c)
	}
	return caps
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
// stops its cycle process too; stopAgent kills one that hangs) and logs
// its output if the test failed.
func stopAgentAtCleanup(t *testing.T, a *agentProc) {
	t.Cleanup(func() {
		stopAgent(t, a)
		if t.Failed() {
			t.Logf("agent log:\n%s", a.log())
		}
	})
}

// TestCycleProgramWithFileCapabilities installs as README.md does without
// the unit: ecagent-cycle carries the three capabilities as file
// capabilities (setcap), and a user holding none runs `ecagent run`. The
// cycle process must get them from its file — no no_new_privs set by the
// agent, which would disable them — reach OP on a veth pair, and hold
// nothing else.
func TestCycleProgramWithFileCapabilities(t *testing.T) {
	needRoot(t)
	for _, tool := range []string{"setpriv", "setcap"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (Debian packages util-linux, libcap2-bin)", tool)
		}
	}
	bin := binaryForAnyUser(t)
	cycleProg := filepath.Join(filepath.Dir(bin), "ecagent-cycle")
	if out, err := exec.Command("setcap", "cap_net_raw,cap_sys_nice,cap_ipc_lock+ep", cycleProg).CombinedOutput(); err != nil {
		t.Skipf("setcap on %s (the file system may not keep file capabilities): %v %s", cycleProg, err, out)
	}
	w := newWire(t, "cpf")
	startSim(t, w, strings.Join(referenceSet, ","))
	runDir := filepath.Join("/dev/shm", fmt.Sprintf("ecagent-cpf-%d", os.Getpid()))
	if err := os.Mkdir(runDir, 0o750); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(runDir) })
	if err := os.Chown(runDir, unprivilegedUID, unprivilegedUID); err != nil {
		t.Fatal(err)
	}
	shmPath := filepath.Join(runDir, "ecagent.shm")
	a := startProcess(t, exec.Command("setpriv", "--reuid", strconv.Itoa(unprivilegedUID), "--regid", strconv.Itoa(unprivilegedUID),
		"--clear-groups", "--inh-caps", "-all", "--", bin, "run", "--bus.interface", w.MasterEnd, "--bus.expectedslaves", "7",
		"--cycle.shm", shmPath, "--status.interval", "300ms", "--metrics.listen", testsupport.FreeAddr(t)))
	stopAgentAtCleanup(t, a)
	a.waitStatus(t, " OP  slaves 7 ", 30*time.Second)
	raw, err := os.ReadFile(contract.BusInfoPath(shmPath))
	if err != nil {
		t.Fatal(err)
	}
	var info contract.BusInfo
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatal(err)
	}
	if agent := procCaps(t, a.cmd.Process.Pid); agent.Effective != 0 || agent.NoNewPrivs {
		t.Fatalf("the agent holds %v (no_new_privs %v): want nothing, or the test shows nothing", agent.Effective, agent.NoNewPrivs)
	}
	want := contract.CapsOf(contract.CapNetRaw, contract.CapSysNice, contract.CapIPCLock)
	pc := procCaps(t, info.CyclePID)
	t.Logf("cycle process %d: %+v", info.CyclePID, pc)
	if pc.Effective != want || pc.Permitted != want || pc.Ambient != 0 || pc.Inheritable != 0 || pc.NoNewPrivs {
		t.Errorf("cycle process %d: %+v; want %v effective and permitted from its file, no ambient or inheritable ones, no no_new_privs",
			info.CyclePID, pc, want)
	}
}

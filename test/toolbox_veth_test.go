package test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/internal/testsupport/cyclereap"
)

// busCounters are the agent's counters a maintenance command must leave
// alone: cycles whose working counter was off or which lost a frame, and
// the bus's fault events (a slave leaving OP, the bus state changing),
// with the slaves' AL states.
type busCounters struct {
	wkc, lost float64
	faults    map[string]float64 // ecagent_bus_events_total by kind, maintenance left out
	states    []float64          // ecagent_slave_al_state per slave
}

func readBusCounters(t *testing.T, addr string) busCounters {
	t.Helper()
	fams := scrape(t, addr)
	value := func(name string) float64 {
		f := fams[name]
		if f == nil || len(f.GetMetric()) == 0 {
			t.Fatalf("no %s in the scrape", name)
		}
		return f.GetMetric()[0].GetCounter().GetValue()
	}
	c := busCounters{wkc: value("ecagent_wkc_errors_total"), lost: value("ecagent_lost_frames_total"), faults: map[string]float64{}}
	if f := fams["ecagent_bus_events_total"]; f != nil {
		for _, m := range f.GetMetric() {
			kind := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					kind = l.GetValue()
				}
			}
			if kind != "maintenance" {
				c.faults[kind] += m.GetCounter().GetValue()
			}
		}
	}
	if f := fams["ecagent_slave_al_state"]; f != nil {
		for _, m := range f.GetMetric() {
			c.states = append(c.states, m.GetGauge().GetValue())
		}
	}
	return c
}

// TestToolboxThroughAgentOverVeth runs the maintenance commands against an
// agent on a veth segment whose segment path comes from the environment, as
// the systemd unit sets it: each answers through the agent, none says
// simulated, and the agent's counters show no working-counter error, no
// lost frame, no fault event and every slave in OP afterwards. A second
// master (--iface of the agent's interface under another segment path) is
// refused naming the agent's cycle process and segment, and disturbs
// nothing; a command with neither agent nor --iface nor --sim exits 2; one
// with --sim says it is simulated.
func TestToolboxThroughAgentOverVeth(t *testing.T) {
	w := newWire(t, "tbx")
	startSim(t, w, strings.Join(referenceSet, ","))
	bin := ecagentBinary(t)
	shmPath := fmt.Sprintf("/dev/shm/ecagent-tbx-%d.shm", os.Getpid())
	environ := []string{"PATH=" + os.Getenv("PATH"), "ECAGENT_CYCLE_SHM=" + shmPath}
	addr := testsupport.FreeAddr(t)
	cmd := exec.Command(bin, "run", "--bus.interface", w.MasterEnd, "--metrics.listen", addr,
		"--status.interval", "0", "--bus.expectedslaves", "7")
	cmd.Env = environ
	a := startProcess(t, cmd)
	t.Cleanup(func() {
		stopAgent(t, a)
		cyclereap.Stop(t, shmPath)
	})
	a.waitLog(t, "maintenance endpoint", 30*time.Second)
	a.waitLog(t, `msg="cyclic operation"`, 10*time.Second)
	m := regexp.MustCompile(`msg="cyclic operation".* pid=(\d+)`).FindStringSubmatch(a.log())
	if m == nil {
		t.Fatalf("the cycle process did not log its pid:\n%s", a.log())
	}
	cyclePID := m[1]

	ecagent := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		c := exec.Command(bin, args...)
		c.Env = env
		var stderr strings.Builder
		c.Stderr = &stderr
		out, err := c.Output()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("ecagent %s: %v", strings.Join(args, " "), err)
		}
		return string(out), stderr.String(), code
	}
	commands := []struct {
		args []string
		want string
	}{
		{[]string{"slaves"}, "EL4132"},
		{[]string{"slaves", "--json"}, `"state": "OP"`},
		{[]string{"sdo", "read", "-p", "5", "0x1018:2"}, "0x1018:02 = 0x10243052"},
		{[]string{"sdo", "write", "-p", "5", "--type", "u32", "0xf008:0", "0x1234"}, "written: 0x00001234"},
		{[]string{"upload", "-p", "5", "0xf008:0", "--type", "u32"}, "= 0x00001234"},
		{[]string{"sdos", "-p", "5"}, `0x1018 RECORD "Identity"`},
		{[]string{"scan"}, "7 slaves"},
		{[]string{"pdos", "-p", "3"}, "EL1014"},
		{[]string{"reg", "read", "-p", "3", "0x0130", "-t", "uint16"}, "0x0008"},
		{[]string{"reg_read", "-a", "0:3", "0x0010", "-t", "uint16"}, "0x1004"},
		{[]string{"sii", "read", "-p", "1", "--json"}, `"data": "`},
		{[]string{"diag", "-p", "5"}, "AL state: OP"},
		{[]string{"slaves", "-p", "3"}, "EL1014"},
		{[]string{"rescan"}, "Answering now:  7"},
		{[]string{"xml", "-p", "5"}, `ProductCode="#x10243052"`},
		{[]string{"scan", "--sdo"}, `"Product code"`},
	}
	// One pass of every command, with the agent's counters before and
	// after. On a host loaded by others a stall of the cycle or the
	// simulator beyond the process data watchdog (100 ms) takes a slave
	// out of OP whatever the commands do: such a pass is told by the frames
	// lost in as long a time without commands, and tried again; a command
	// that disturbs the bus disturbs every pass.
	const passes = 3
	for pass := 1; ; pass++ {
		var before busCounters
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			before = readBusCounters(t, addr)
			if allOP(before.states) && len(before.states) == 7 && before.faults["cycle-started"] >= 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("slaves not in OP: %v", before.states)
			}
		}
		start := time.Now()
		for _, c := range commands {
			out, errOut, code := ecagent(environ, c.args...)
			if code != 0 || !strings.Contains(out, c.want) {
				t.Errorf("ecagent %s: exit %d, want %q in:\n%s%s", strings.Join(c.args, " "), code, c.want, out, errOut)
			}
			if strings.Contains(out, "simulated") {
				t.Errorf("ecagent %s through the agent of a veth segment says simulated:\n%s", strings.Join(c.args, " "), out)
			}
		}
		took := time.Since(start)
		after := readBusCounters(t, addr)
		time.Sleep(took) // the control window: a span of time, not a synchronisation
		idle := readBusCounters(t, addr)
		during, without := after.lost-before.lost, idle.lost-after.lost
		t.Logf("pass %d: cycles with a lost frame: %v in %v of commands, %v in as long without", pass, during,
			took.Round(time.Millisecond), without)
		var problems []string
		if after.wkc != before.wkc {
			problems = append(problems, fmt.Sprintf("working-counter errors %v → %v", before.wkc, after.wkc))
		}
		if during > 10 && during > 4*without+10 {
			problems = append(problems, fmt.Sprintf("%v cycles lost a frame in %v, %v in as long without", during,
				took.Round(time.Millisecond), without))
		}
		for kind, n := range after.faults {
			// Bus alarms follow lost frames, compared above.
			if n != before.faults[kind] && !strings.HasPrefix(kind, "bus-alarm") {
				problems = append(problems, fmt.Sprintf("bus events %s: %v → %v", kind, before.faults[kind], n))
			}
		}
		if !allOP(after.states) || len(after.states) != 7 {
			problems = append(problems, fmt.Sprintf("slaves after the commands: %v, want all in OP (8)", after.states))
		}
		if len(problems) == 0 || t.Failed() {
			break
		}
		hostStalled := without > 0 || idle.wkc != after.wkc
		if pass == passes || !hostStalled {
			t.Errorf("the commands disturbed the agent's cycle (pass %d, host stalls in the control window: %v): %s",
				pass, hostStalled, strings.Join(problems, "; "))
			break
		}
		t.Logf("pass %d not clean, on a host that stalls the cycle without commands too: %s", pass, strings.Join(problems, "; "))
	}

	// A second master on the agent's interface, the agent's segment not
	// named: refused, naming the cycle process and its segment.
	other := []string{"PATH=" + os.Getenv("PATH")}
	wkcBefore := readBusCounters(t, addr).wkc
	_, errOut, code := ecagent(other, "slaves", "--iface", w.MasterEnd, "--cycle.shm", "/dev/shm/ecagent-tbx-none.shm")
	if code != 4 || !strings.Contains(errOut, "pid "+cyclePID) || !strings.Contains(errOut, shmPath) ||
		!strings.Contains(errOut, "--second-master") {
		t.Errorf("second master: exit %d (want 4), stderr:\n%s", code, errOut)
	}
	if wkc := readBusCounters(t, addr).wkc; wkc != wkcBefore {
		t.Errorf("the refused second master cost the agent working-counter errors: %v → %v", wkcBefore, wkc)
	}
	// Neither an agent nor --iface nor --sim: a usage error, no data.
	out, errOut, code := ecagent(other, "slaves", "--cycle.shm", "/nonexistent/x.shm")
	if code != 2 || out != "" || !strings.Contains(errOut, "neither --iface nor --sim") {
		t.Errorf("no agent, no interface: exit %d (want 2)\n%s%s", code, out, errOut)
	}
	out, _, code = ecagent(other, "slaves", "--sim", "--json")
	if code != 0 || !strings.Contains(out, `"simulated": true`) {
		t.Errorf("slaves --sim --json: exit %d\n%s", code, out)
	}

	if err := a.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the agent died: %v\n%s", err, a.log())
	}
}

// allOP reports whether every AL state (ecagent_slave_al_state) is OP.
func allOP(states []float64) bool {
	for _, s := range states {
		if s != 8 {
			return false
		}
	}
	return len(states) > 0
}

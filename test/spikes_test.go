package test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/internal/testsupport"
)

// spikeCore is the core the spike tests pin the cycle to (the second:
// the host has two).
const spikeCore = 1

// spikesReply is /spikes's answer (agent.SpikesReply).
type spikesReply struct {
	Forensics string               `json:"forensics"`
	Why       string               `json:"why"`
	Spikes    []contract.SpikeView `json:"spikes"`
}

func getSpikes(t *testing.T, addr string) spikesReply {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/spikes?n=256")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r spikesReply
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("/spikes: %v", err)
	}
	return r
}

// startSpikeAgent runs the agent over a veth segment with the cycle
// pinned to spikeCore at SCHED_FIFO 80 and forensics on; it returns the
// agent and its metrics address once forensics run and the cycle does.
func startSpikeAgent(t *testing.T, tag string, extra ...string) (*agentProc, string) {
	t.Helper()
	if _, err := os.Stat("/sys/kernel/tracing/instances"); err != nil {
		t.Skipf("no tracefs: %v", err)
	}
	w := newWire(t, tag)
	startSim(t, w, strings.Join(referenceSet, ","))
	addr := testsupport.FreeAddr(t)
	path := fmt.Sprintf("/dev/shm/ecagent-%s-%d.shm", tag, os.Getpid())
	args := append([]string{"--bus.interface", w.MasterEnd, "--cycle.shm", path, "--status.interval", "0",
		"--metrics.listen", addr, "--cycle.core", strconv.Itoa(spikeCore), "--cycle.priority", "80",
		"--forensics.instance", "ecagent-test-" + tag}, extra...)
	a := startAgent(t, args...)
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		_ = a.cmd.Wait()
		if _, err := os.Stat("/sys/kernel/tracing/instances/ecagent-test-" + tag); err == nil {
			t.Errorf("the agent left its tracefs instance behind")
		}
	})
	a.waitLog(t, "forensics on", 30*time.Second)
	a.waitLog(t, "cycle started", 30*time.Second)
	return a, addr
}

// hog is a running injector (hogMain).
type hog struct {
	tid int
	mu  sync.Mutex
	// bursts are the spans it spun, CLOCK_MONOTONIC ns.
	bursts [][2]int64
}

// spans returns the bursts so far.
func (h *hog) spans() [][2]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][2]int64(nil), h.bursts...)
}

// startHog runs the injector (hogMain); it ends by itself after total,
// and is killed at the test's end otherwise.
func startHog(t *testing.T, prio int, burst, every, total time.Duration, name string) *hog {
	t.Helper()
	return startInjector(t, hogEnv, fmt.Sprintf("%d,%d,%v,%v,%v,%s", spikeCore, prio, burst, every, total, name))
}

// startInjector runs the test binary as the injector env names, with
// spec: it prints its thread's id and "go", then "burst START END" after
// each burst (hogMain, floodMain, compactMain). It ends by itself and is
// killed at the test's end otherwise.
func startInjector(t *testing.T, env, spec string) *hog {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env+"="+spec)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testsupport.SyncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("injector %s: %v: %s", env, err, stderr.String())
	}
	h := &hog{}
	if h.tid, err = strconv.Atoi(strings.TrimSuffix(line, " go\n")); err != nil {
		t.Fatalf("injector %s said %q", env, line)
	}
	go func() {
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			var b [2]int64
			if _, err := fmt.Sscanf(line, "burst %d %d", &b[0], &b[1]); err == nil {
				h.mu.Lock()
				h.bursts = append(h.bursts, b)
				h.mu.Unlock()
			}
		}
	}()
	return h
}

// spikesIn returns, for each span, the spikes whose window (deadline to
// wake-up, or to the job's end: at least the longer of its lateness and
// its excess) overlaps it — those the injection could have caused, not a
// neighbour's; a span without one maps to nil.
func spikesIn(spikes []contract.SpikeView, spans [][2]int64) [][]contract.SpikeView {
	out := make([][]contract.SpikeView, len(spans))
	for i, s := range spans {
		for _, sp := range spikes {
			end := sp.Deadline + int64(max(sp.LateUS, sp.ExcessUS)*1e3)
			if sp.Deadline <= s[1] && end >= s[0] {
				out[i] = append(out[i], sp)
			}
		}
	}
	return out
}

// waitExplained waits until every spike so far has been explained: it
// makes one more, by a FIFO hog (ecmarkerhog) above the cycle on its
// core, and waits for it — the collector explains spikes in their order.
func waitExplained(t *testing.T, a *agentProc, addr string) {
	t.Helper()
	m := startHog(t, 90, 3*time.Millisecond, 50*time.Millisecond, 60*time.Millisecond, "ecmarkerhog")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if spans := m.spans(); len(spans) == 1 && len(spikesIn(getSpikes(t, addr).Spikes, spans)[0]) > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the marker's spike was not explained within 20 s\n%s", a.log())
		}
	}
}

// TestSpikesBlameFIFOHog: a SCHED_FIFO busy loop above the cycle's
// priority on its core, 3 ms every second, makes spikes the agent blames
// on that task, by name and pid, with at least 80 % of each one's excess:
// at least 90 % of the bursts' spikes.
func TestSpikesBlameFIFOHog(t *testing.T) {
	a, addr := startSpikeAgent(t, "spk")
	const bursts = 10
	h := startHog(t, 90, 3*time.Millisecond, time.Second, bursts*time.Second+500*time.Millisecond, "ecspikehog")
	want := fmt.Sprintf("ecspikehog/%d ", h.tid)
	var per [][]contract.SpikeView
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		spans := h.spans()
		per = spikesIn(getSpikes(t, addr).Spikes, spans)
		if len(spans) == bursts {
			// the last burst's spike is explained within a poll or two
			if n := len(per); n > 0 && per[n-1] != nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bursts, spikes per burst: %+v\n%s", len(spans), per, a.log())
		}
	}
	right := 0
	for i, sps := range per {
		ok := false
		for _, sp := range sps {
			top := topCause(sp)
			t.Logf("burst %d: cycle %d late %.0f µs excess %.0f µs: %+v", i, sp.Cycle, sp.LateUS, sp.ExcessUS, sp.Causes)
			if top.Class == "task" && strings.HasPrefix(top.Name, want) && top.PID == h.tid && top.Share >= 0.8 {
				ok = true
			}
		}
		if ok {
			right++
		}
	}
	if right*10 < len(per)*9 {
		t.Errorf("%d of %d bursts' spikes blamed on %s with ≥ 80 %%, want ≥ 90 %%", right, len(per), want)
	}
	m := scrape(t, addr)
	var taskSpikes float64
	for _, s := range m["ecagent_cycle_spikes_total"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "cause" && l.GetValue() == "task" {
				taskSpikes = s.GetCounter().GetValue()
			}
		}
	}
	if taskSpikes < float64(right) {
		t.Errorf("ecagent_cycle_spikes_total{cause=\"task\"} = %v, want ≥ %d", taskSpikes, right)
	}
	if !strings.Contains(a.log(), "event=cycle-spike") || !strings.Contains(a.log(), want) {
		t.Errorf("no cycle-spike log line naming %s", want)
	}
	// The toolbox lists them through the running agent.
	out, err := exec.Command(ecagentBinary(t), "spikes", "--metrics.listen", addr, "-n", "256").CombinedOutput()
	if err != nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "CULPRIT") {
		t.Errorf("ecagent spikes: %v\n%s", err, out)
	}
}

// TestForensicsOffWithoutPermission runs the agent as an unprivileged
// user (nobody), to whom tracefs is closed: the agent runs the cycle on,
// its log, ecagent_forensics_enabled and /readyz's details say that
// forensics are off and why, and /spikes says so too.
func TestForensicsOffWithoutPermission(t *testing.T) {
	needRoot(t)
	if _, err := os.Stat("/sys/kernel/tracing/instances"); err != nil {
		t.Skipf("no tracefs: %v", err)
	}
	// The binaries where nobody may run them.
	dir, err := os.MkdirTemp("", "ecagent-nobody")
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
		if err := os.WriteFile(dir+"/"+filepathBase(src), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr := testsupport.FreeAddr(t)
	shmPath := fmt.Sprintf("/dev/shm/ecagent-nobody-%d.shm", os.Getpid())
	t.Cleanup(func() { _ = os.Remove(shmPath) })
	cmd := exec.Command(dir+"/ecagent", "run", "--cycle.shm", shmPath, "--status.interval", "0",
		"--metrics.listen", addr, "--cycle.core", strconv.Itoa(spikeCore), "--forensics.instance", "ecagent-test-nobody")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	a := startWithFiles(t, cmd)
	t.Cleanup(func() { _ = a.cmd.Process.Signal(syscall.SIGTERM); _ = a.cmd.Wait() })
	a.waitLog(t, "forensics off", 30*time.Second)
	a.waitLog(t, "cycle started", 30*time.Second)
	if !strings.Contains(a.log(), "reason=not-permitted") {
		t.Errorf("the log does not say forensics are not permitted:\n%s", a.log())
	}
	m := scrape(t, addr)
	got := map[string]float64{}
	for _, s := range m["ecagent_forensics_enabled"].GetMetric() {
		for _, l := range s.GetLabel() {
			if l.GetName() == "reason" {
				got[l.GetValue()] = s.GetGauge().GetValue()
			}
		}
	}
	if got["not-permitted"] != 1 || got["on"] != 0 {
		t.Errorf("ecagent_forensics_enabled = %v, want not-permitted 1, on 0", got)
	}
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "forensics: off (not-permitted): tracefs at /sys/kernel/tracing is not permitted") {
		t.Errorf("/readyz does not say why forensics are off:\n%s", body)
	}
	if r := getSpikes(t, addr); r.Forensics != "not-permitted" || r.Why == "" {
		t.Errorf("/spikes: forensics %q, why %q", r.Forensics, r.Why)
	}
	if _, err := os.Stat("/sys/kernel/tracing/instances/ecagent-test-nobody"); err == nil {
		t.Errorf("an instance was made without permission")
	}
}

// topCause is a spike's largest cause; a spike the agent charged no time
// to any cause has none and is reported with its top class (unknown):
// it counts as not blamed on what a test injected, and does not panic
// the test (seen once under stress: late 844 µs, excess 0, no causes).
func topCause(sp contract.SpikeView) contract.SpikeCauseView {
	if len(sp.Causes) == 0 {
		return contract.SpikeCauseView{Class: sp.Top}
	}
	return sp.Causes[0]
}

func filepathBase(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// TestSpikesBlameRTThrottling: with sched_rt_runtime_us lowered to 70 %
// of the period and a SCHED_FIFO hog below the cycle's priority spinning
// on its core, the core's real-time tasks are throttled for the rest of
// each period: the cycle's long spikes then are rt-throttling, not the
// hog (which the cycle preempts) nor the tasks the throttled core runs.
// The setting is restored when the test ends.
func TestSpikesBlameRTThrottling(t *testing.T) {
	// With RT_GROUP_SCHED (cgroup v1 cpu controller) the root group's
	// runtime is what throttles, and the sysctl cannot go below it.
	knob := "/sys/fs/cgroup/cpu/cpu.rt_runtime_us"
	if _, err := os.Stat(knob); err != nil {
		knob = "/proc/sys/kernel/sched_rt_runtime_us"
	}
	old, err := os.ReadFile(knob)
	if err != nil {
		t.Skipf("no RT throttling knob: %v", err)
	}
	a, addr := startSpikeAgent(t, "thr")
	t.Cleanup(func() {
		if err := os.WriteFile(knob, old, 0o644); err != nil {
			t.Errorf("restoring %s to %s: %v", knob, strings.TrimSpace(string(old)), err)
		}
	})
	if err := os.WriteFile(knob, []byte("700000"), 0o644); err != nil {
		t.Fatalf("lowering %s: %v", knob, err)
	}
	// Two bursts: how long a burst is throttled depends on where in the
	// RT period it begins and on the fair server; once in about 30 runs
	// under stress-ng one burst brought no spike of 20 ms.
	h := startHog(t, 50, 1500*time.Millisecond, 2000*time.Millisecond, 3700*time.Millisecond, "ecthrottlehog")
	// A spike whose window the trace no longer reaches (the agent, a
	// normal task, read the ring after it wrapped: a loaded host) is
	// reported as such, with no causes to judge; the test judges the
	// others and needs one.
	var long, incomplete []contract.SpikeView
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		spans := h.spans()
		long, incomplete = long[:0], incomplete[:0]
		if len(spans) > 0 {
			for _, sps := range spikesIn(getSpikes(t, addr).Spikes, spans) {
				for _, sp := range sps {
					switch {
					case sp.LateUS < 20000:
					case sp.Incomplete:
						incomplete = append(incomplete, sp)
					default:
						long = append(long, sp)
					}
				}
			}
			if len(long) > 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no spike of 20 ms or more with a complete trace during the hog's %d burst(s); %d with an incomplete one\n%s",
				len(spans), len(incomplete), a.log())
		}
	}
	for _, sp := range incomplete {
		if sp.Top != "unknown" || len(sp.Causes) != 1 || sp.Causes[0].Class != "unknown" {
			t.Errorf("spike of cycle %d has an incomplete trace but names causes: %+v", sp.Cycle, sp)
		}
		t.Logf("cycle %d late %.0f µs: trace incomplete, not judged", sp.Cycle, sp.LateUS)
	}
	if err := os.WriteFile(knob, old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sp := range long {
		t.Logf("cycle %d late %.0f µs: %+v", sp.Cycle, sp.LateUS, sp.Causes)
		// The largest cause must be the throttling (the criterion:
		// the right class). Its share varies: a throttled core with nothing
		// else to run idles, and idle with the cycle runnable reads as the
		// host's ("core waking from idle"), 4–24 % of these spikes; on a
		// host under stress-ng the task that ran while the cycle was
		// throttled can still be in the kernel, not preemptible (this
		// kernel has no preemption), when the throttling ends: 39 % once,
		// throttling 49.9 %. A third is the least that still says the
		// throttling is what held the cycle.
		if top := topCause(sp); top.Class != "rt-throttling" || top.Share < 1.0/3 {
			t.Errorf("spike of cycle %d (late %.0f µs) not blamed on RT throttling first: %+v", sp.Cycle, sp.LateUS, sp.Causes)
		}
	}
}

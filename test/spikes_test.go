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

// startHog runs the injector (hogMain) and returns its thread's id; it
// ends by itself after total, and is killed at the test's end otherwise.
func startHog(t *testing.T, prio int, burst, every, total time.Duration, name string) int {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%v,%v,%v,%s", hogEnv, spikeCore, prio, burst, every, total, name))
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
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("hog: %v: %s", err, stderr.String())
	}
	go io.Copy(io.Discard, out)
	tid, err := strconv.Atoi(strings.TrimSuffix(line, " go\n"))
	if err != nil {
		t.Fatalf("hog said %q", line)
	}
	return tid
}

// cyclesRun is ecagent_cycles_total: at least the number of the cycle
// that runs now.
func cyclesRun(t *testing.T, addr string) uint64 {
	t.Helper()
	f := scrape(t, addr)["ecagent_cycles_total"]
	if f == nil || len(f.GetMetric()) == 0 {
		t.Fatal("no ecagent_cycles_total")
	}
	return uint64(f.GetMetric()[0].GetCounter().GetValue())
}

// TestSpikesBlameFIFOHog: a SCHED_FIFO busy loop above the cycle's
// priority on its core, 3 ms every second, makes spikes the agent blames
// on that task, by name and pid, with at least 80 % of each one's excess.
func TestSpikesBlameFIFOHog(t *testing.T) {
	a, addr := startSpikeAgent(t, "spk")
	const bursts = 10
	first := cyclesRun(t, addr) // spikes before the hog are the host's
	tid := startHog(t, 90, 3*time.Millisecond, time.Second, bursts*time.Second+500*time.Millisecond, "ecspikehog")
	want := fmt.Sprintf("ecspikehog/%d ", tid)
	var injected []contract.SpikeView
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		injected = injected[:0]
		for _, sp := range getSpikes(t, addr).Spikes {
			if sp.LateUS >= 2000 && sp.Cycle >= first { // the hog's 3 ms bursts; the host's own are shorter as a rule
				injected = append(injected, sp)
			}
		}
		if len(injected) >= bursts-1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d spikes of 2 ms or more after %d bursts: %+v\n%s", len(injected), bursts, injected, a.log())
		}
	}
	right := 0
	for _, sp := range injected {
		t.Logf("cycle %d late %.0f µs excess %.0f µs: %+v", sp.Cycle, sp.LateUS, sp.ExcessUS, sp.Causes)
		top := sp.Causes[0]
		if top.Class == "task" && strings.HasPrefix(top.Name, want) && top.PID == tid && top.Share >= 0.8 {
			right++
			continue
		}
		t.Logf("spike of cycle %d (late %.0f µs) not blamed on %s: %+v", sp.Cycle, sp.LateUS, want, sp.Causes)
	}
	// ≥ 90 % of the injected spikes attributed right (a spike of the
	// host's own of 2 ms or more may fall among them).
	if right*10 < len(injected)*9 {
		t.Errorf("%d of %d spikes of 2 ms or more blamed on the hog, want ≥ 90 %%", right, len(injected))
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
}

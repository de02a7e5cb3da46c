package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/sim"
)

// faultPeriod is the cycle of the fault tests: long enough that the host
// never makes an answer late by itself (on this VM a 1 ms cycle over veth
// loses a frame every few seconds to scheduling), so that every lost frame
// counted is one the simulator dropped.
const faultPeriod = "5ms"

// counter sums the samples of a counter or gauge family whose labels
// include want.
func counter(fams map[string]*dto, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.GetMetric() {
		for k, v := range want {
			found := false
			for _, l := range m.GetLabel() {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			sum += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			sum += m.GetGauge().GetValue()
		}
	}
	return sum
}

// faultRig is an agent running against an in-process simulated segment on
// a veth pair, whose faults the test injects through the Go API. Its
// methods take the *testing.T of the (sub)test calling them, so that a
// failure ends that subtest only.
type faultRig struct {
	t       *testing.T // the test that owns the rig: cleanups
	w       wire
	devices []string
	seg     *sim.Segment
	// stopSim stops the simulated segment; its error is the segment's.
	stopSim func() error
	// stopped reports whether stopSim ran since the last startSim.
	stopped func() bool
	a       *agentProc
	addr    string
	shm     string
	// scraper opens a connection per scrape, so that the agent's
	// keep-alive connections do not count among its goroutines.
	scraper *http.Client
	// exited is closed when the agent process has ended, exitErr then
	// says how.
	exited  chan struct{}
	exitErr error
}

// startSim serves a fresh simulated segment (every device just powered
// on) on the wire until stopSim; t is the test that fails if it cannot.
func (r *faultRig) startSim(t *testing.T) {
	t.Helper()
	var devs []*sim.Device
	for _, d := range r.devices {
		dev, err := sim.NewDevice(d)
		if err != nil {
			t.Fatal(err)
		}
		devs = append(devs, dev)
	}
	var l *link.RawSocket
	if err := inNamespace(t, r.w.NS, func() (err error) {
		l, err = link.Open(r.w.SimEnd, link.SegmentConfig())
		return err
	}); err != nil {
		t.Fatalf("open simulator end: %v", err)
	}
	r.seg = sim.NewSegment(devs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		// As `ecagent sim --priority 70` in the other tests: the segment
		// answers at a real-time priority, so that a loaded host delays
		// the cycle's frames no more than a real segment would. The thread
		// ends with the goroutine (it stays locked).
		runtime.LockOSThread()
		setup := rt.Apply(rt.Options{Priority: 70, Core: -1})
		defer setup.Close()
		done <- r.seg.Serve(ctx, l)
	}()
	stopped := false
	r.stopped = func() bool { return stopped }
	r.stopSim = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		_ = l.Close()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("simulated segment: %w", err)
		}
		return nil
	}
	owner, stop := r.t, r.stopSim
	r.t.Cleanup(func() {
		if err := stop(); err != nil {
			owner.Error(err)
		}
	})
}

// newFaultRig starts the rig: the simulated segment of devices and an
// agent against it, with extra flags after the rig's own.
func newFaultRig(t *testing.T, devices []string, extra ...string) *faultRig {
	w := newWire(t, "flt")
	r := &faultRig{t: t, w: w, devices: devices,
		scraper: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}}
	r.startSim(t)
	path := fmt.Sprintf("/dev/shm/ecagent-faults-%d.shm", os.Getpid())
	r.shm = path
	// Both listeners on ports the kernel picks; the agent logs which.
	args := append([]string{"--bus.interface", w.MasterEnd, "--cycle.shm", path, "--cycle.period", faultPeriod,
		"--status.interval", "0", "--metrics.listen", "127.0.0.1:0", "--metrics.window", "1s",
		"--mqtt.embedded", "127.0.0.1:0", "--bus.expectedslaves", strconv.Itoa(len(devices))}, extra...)
	r.a = startAgent(t, args...)
	r.exited = make(chan struct{})
	go func() { r.exitErr = r.a.cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		_ = r.a.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.exited:
		case <-time.After(10 * time.Second):
			_ = r.a.cmd.Process.Kill()
			<-r.exited
		}
	})
	r.addr = r.a.loggedAddr(t, "metrics endpoint", 30*time.Second)
	r.a.waitLog(t, "cycle started", 30*time.Second)
	r.waitHealthy(t, 5*time.Second)
	return r
}

// ready reports whether /readyz says ready.
func (r *faultRig) ready() bool {
	resp, err := r.scraper.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitHealthy waits until the agent is ready and the last cycles had the
// expected working counter, and returns how long that took. The bound
// within is in cycles of the bus (within / faultPeriod of them, counted
// by ecagent_cycles_total), not in time: every datagram of recovery rides
// in a cycle, so a host that steals time from the cycle process stretches
// recovery in time but not in cycles, and that is what the agent
// guarantees (docs/operations.md, "Guarantees under load"). A host that
// lets the bus run less than a tenth of its cycles fails it too.
func (r *faultRig) waitHealthy(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	period, _ := time.ParseDuration(faultPeriod)
	bound := float64(within / period)
	start := time.Now()
	c0 := framesOf(r.scrape(t)).cycles
	for next := start; ; {
		if r.ready() {
			return time.Since(start)
		}
		if time.Since(next) >= 0 {
			// A scrape costs the host CPU: not at every look.
			next = time.Now().Add(50 * time.Millisecond)
			ran := framesOf(r.scrape(t)).cycles - c0
			switch {
			case ran > bound:
				t.Fatalf("not ready %v cycles (%v at %s, bound %v) after the fault cleared, in %v; agent log:\n%s",
					ran, within, faultPeriod, bound, time.Since(start).Round(time.Millisecond), tail(r.a.log(), 30))
			case time.Since(start) > 10*within:
				t.Fatalf("not ready %v after the fault cleared: the bus ran %v cycles (bound %v); agent log:\n%s",
					10*within, ran, bound, tail(r.a.log(), 30))
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive fails t if the agent process has exited (a process that exited
// but is not waited for still takes signals: the rig waits for it).
func (r *faultRig) alive(t *testing.T) {
	t.Helper()
	select {
	case <-r.exited:
		t.Fatalf("the agent exited: %v\n%s", r.exitErr, tail(r.a.log(), 40))
	default:
	}
}

// begin starts a subtest t on the rig: the agent runs and is ready (an
// earlier subtest that failed may have left a fault: its repair ran, and
// the agent gets time to recover from it), and the frame counters stand
// still; it returns that scrape. When the rig is not usable it fails t
// alone, saying so, and the subtests after it try again.
func (r *faultRig) begin(t *testing.T) map[string]*dto {
	t.Helper()
	r.alive(t)
	const within = 10 * time.Second
	deadline := time.Now().Add(within)
	for !r.ready() {
		if time.Now().After(deadline) {
			t.Fatalf("the rig is not ready at the start of the subtest (an earlier one left it so) within %v; agent log:\n%s",
				within, tail(r.a.log(), 30))
		}
		time.Sleep(10 * time.Millisecond)
	}
	return r.settle(t)
}

// repairOnFailure makes a failed subtest t put the rig back as the
// subtests after it expect: every fault of the simulator off, the link
// up, a stopped cycle process continued, the simulator served, and the
// devices at positions powered up again as the right model. What it did
// is logged in t; a passed subtest leaves the rig alone.
func (r *faultRig) repairOnFailure(t *testing.T, positions ...int) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if r.stopped() {
			t.Log("repair: simulator started again")
			r.startSim(t)
		}
		f := r.seg.Faults()
		f.DropOff()
		f.DelayOff()
		f.CorruptWKC(0)
		f.CorruptLength(0)
		_ = exec.Command("ip", "link", "set", r.w.MasterEnd, "up").Run()
		if pid := cyclePIDOf(r.shm); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		for _, pos := range positions {
			_ = f.ReleaseALError(pos)
			if err := f.Disappear(pos); err != nil && !errors.Is(err, sim.ErrDeviceOff) {
				t.Logf("repair: slave %d: %v", pos, err)
				continue
			}
			if err := f.ReturnAs(pos, r.devices[pos]); err != nil {
				t.Logf("repair: slave %d: %v", pos, err)
				continue
			}
			t.Logf("repair: slave %d powered up again as %s", pos, r.devices[pos])
		}
	})
}

// scrape reads the agent's metrics over a fresh connection.
func (r *faultRig) scrape(t *testing.T) map[string]*dto {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+r.addr+"/metrics", nil)
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := r.scraper.Do(req)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	return parseExposition(t, resp.Body)
}

// waitFor scrapes until cond holds of a scrape, and returns that scrape;
// after within it fails t, saying what it waited for.
func (r *faultRig) waitFor(t *testing.T, what string, within time.Duration, cond func(map[string]*dto) bool) map[string]*dto {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		fams := r.scrape(t)
		if cond(fams) {
			return fams
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v; agent log:\n%s", what, within, tail(r.a.log(), 20))
		}
		// A scrape costs CPU, the agent's and this process's, where the
		// simulator answers the cycle's frames: not more often.
		time.Sleep(50 * time.Millisecond)

	}
}

// waitSim waits until the simulator's fault counts satisfy cond: the
// faults armed have all been applied.
func waitSim(t *testing.T, f *sim.Faults, what string, within time.Duration, cond func(sim.FaultCounts) bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond(f.Counts()) {
		if time.Now().After(deadline) {
			t.Fatalf("the simulator did not apply %s within %v: %v", what, within, f.Counts())
		}
		time.Sleep(5 * time.Millisecond) // once a cycle: Counts takes the segment's lock
	}
}

// frameCounts are the agent's counters of a cycle's frames in one scrape.
type frameCounts struct{ cycles, lost, late, wkc float64 }

func framesOf(fams map[string]*dto) frameCounts {
	return frameCounts{
		cycles: counter(fams, "ecagent_cycles_total", nil),
		lost:   counter(fams, "ecagent_lost_frames_total", nil),
		late:   counter(fams, "ecagent_late_answers_total", nil),
		wkc:    counter(fams, "ecagent_wkc_errors_total", nil),
	}
}

func (c frameCounts) minus(o frameCounts) frameCounts {
	return frameCounts{cycles: c.cycles - o.cycles, lost: c.lost - o.lost, late: c.late - o.late, wkc: c.wkc - o.wkc}
}

// settleCycles is how many cycles in a row settle wants without a lost
// frame, a late answer or a working counter error: the answer to a frame
// lost late in a window would arrive in the next cycle, so a quiet stretch
// this long means none is still to come.
const settleCycles = 5

// settle waits until the frame counters stand still for settleCycles
// cycles in a row, and returns that scrape: every frame lost before it is
// counted, and every late answer to one of them too.
func (r *faultRig) settle(t *testing.T) map[string]*dto {
	t.Helper()
	const within = 10 * time.Second
	deadline := time.Now().Add(within)
	prev := r.scrape(t)
	for {
		p := framesOf(prev)
		cur := r.waitFor(t, "the cycle to advance", time.Until(deadline), func(f map[string]*dto) bool {
			return framesOf(f).cycles >= p.cycles+settleCycles
		})
		if d := framesOf(cur).minus(p); d.lost == 0 && d.late == 0 && d.wkc == 0 {
			return cur
		}
		if time.Now().After(deadline) {
			t.Fatalf("the frame counters did not stand still for %d cycles within %v", settleCycles, within)
		}
		prev = cur
	}
}

// checkLost checks that the frames lost between two settled scrapes, less
// those whose answer came back late (a cycle that discards an answer to an
// earlier frame), are exactly the injected ones. A loaded host can lose a
// frame of its own: its answer comes back late, and the late answer
// cancels it, unless one cycle discarded several (the counter counts
// cycles); so more than injected is the host's only in a window with late
// answers, and is logged as such. Fewer is always an error: a fault the
// agent did not count.
func checkLost(t *testing.T, kind string, injected float64, d frameCounts) {
	t.Helper()
	dropped := d.lost - d.late
	switch {
	case dropped < injected:
		t.Errorf("%s: %v frames lost (%v lost, %v late answers), want the %v injected", kind, dropped, d.lost, d.late, injected)
	case dropped > injected && d.late == 0:
		t.Errorf("%s: %v frames lost, %v injected, and no late answer tells the rest apart as the host's", kind, dropped, injected)
	case dropped > injected:
		t.Logf("%s: %v injected frames counted, and %v lost spontaneously (the host made answers late: %v cycles discarded late answers)",
			kind, injected, dropped-injected, d.late)
	}
}

// cyclePIDOf reads the cycle process's PID from the bus description the
// cycle writes beside its shared memory.
func cyclePIDOf(shmPath string) int {
	b, err := os.ReadFile(shmPath + ".bus.json")
	if err != nil {
		return 0
	}
	var info struct {
		CyclePID int `json:"cycle_pid"`
	}
	if json.Unmarshal(b, &info) != nil {
		return 0
	}
	return info.CyclePID
}

// openFDs lists what a process's descriptors point to.
func openFDs(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		target, _ := os.Readlink(dir + "/" + e.Name())
		out = append(out, e.Name()+"→"+target)
	}
	return out
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// quiet scrapes until the agent's goroutines and descriptors read the same
// in two scrapes in a row: the connections of earlier scrapes are closed.
// Each scrape comes over a fresh connection, so the agent's HTTP
// keep-alive goroutines do not count.
func (r *faultRig) quiet(t *testing.T) map[string]*dto {
	t.Helper()
	figures := func(fams map[string]*dto) [2]float64 {
		return [2]float64{counter(fams, "go_goroutines", nil), counter(fams, "process_open_fds", nil)}
	}
	prev := r.scrape(t)
	deadline := time.Now().Add(5 * time.Second)
	for {
		cur := r.scrape(t)
		if figures(cur) == figures(prev) || time.Now().After(deadline) {
			return cur
		}
		prev = cur
	}
}

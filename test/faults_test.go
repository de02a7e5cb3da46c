package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ecagent/ecagent/master/link"
	"github.com/ecagent/ecagent/master/sim"
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
// a veth pair, whose faults the test injects through the Go API.
type faultRig struct {
	t       *testing.T
	w       wire
	devices []string
	seg     *sim.Segment
	stopSim func()
	a       *agentProc
	addr    string
	shm     string
}

// startSim serves a fresh simulated segment (every device just powered
// on) on the wire until stopSim.
func (r *faultRig) startSim() {
	r.t.Helper()
	var devs []*sim.Device
	for _, d := range r.devices {
		dev, err := sim.NewDevice(d)
		if err != nil {
			r.t.Fatal(err)
		}
		devs = append(devs, dev)
	}
	var l *link.RawSocket
	if err := inNamespace(r.t, r.w.NS, func() (err error) {
		l, err = link.Open(r.w.SimEnd, nil)
		return err
	}); err != nil {
		r.t.Fatalf("open simulator end: %v", err)
	}
	r.seg = sim.NewSegment(devs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.seg.Serve(ctx, l) }()
	stopped := false
	r.stopSim = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		_ = l.Close()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			r.t.Errorf("simulated segment: %v", err)
		}
	}
	r.t.Cleanup(r.stopSim)
}

func newFaultRig(t *testing.T, devices []string) *faultRig {
	w := newWire(t, "flt")
	r := &faultRig{t: t, w: w, devices: devices, addr: freePort(t)}
	r.startSim()
	path := fmt.Sprintf("/dev/shm/ecagent-faults-%d.shm", os.Getpid())
	r.shm = path
	r.a = startAgent(t, "--bus.interface", w.MasterEnd, "--cycle.shm", path, "--cycle.period", faultPeriod,
		"--status.interval", "0", "--metrics.listen", r.addr, "--metrics.window", "1s",
		"--mqtt.embedded", freePort(t), "--bus.expectedslaves", strconv.Itoa(len(devices)))
	t.Cleanup(func() { _ = r.a.cmd.Process.Signal(syscall.SIGTERM); _ = r.a.cmd.Wait() })
	r.a.waitLog(t, "cycle started", 30*time.Second)
	r.waitHealthy(5 * time.Second)
	return r
}

// ready reports whether /readyz says ready.
func (r *faultRig) ready() bool {
	resp, err := http.Get("http://" + r.addr + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitHealthy waits until the agent is ready and the last cycles had the
// expected working counter; it returns how long that took.
func (r *faultRig) waitHealthy(within time.Duration) time.Duration {
	r.t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		if r.ready() {
			return time.Since(start)
		}
		time.Sleep(10 * time.Millisecond)
	}
	r.t.Fatalf("not ready %v after the fault cleared; agent log:\n%s", within, tail(r.a.log(), 30))
	return 0
}

// agentExited fails the test if the agent process has exited.
func (r *faultRig) alive() {
	r.t.Helper()
	if err := r.a.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		r.t.Fatalf("the agent exited: %v\n%s", err, tail(r.a.log(), 30))
	}
}

// settle waits until the exported counters stop moving (a window of the
// cycle's events has been read).
func (r *faultRig) settle() map[string]*dto {
	time.Sleep(300 * time.Millisecond)
	return scrape(r.t, r.addr)
}

// dropped is how many frames were lost between two scrapes and never came
// back (lost, less the late answers the cycle discarded later): the frames
// the segment dropped, whatever the host's scheduling did to the others.
func dropped(before, after map[string]*dto) float64 {
	lost := counter(after, "ecagent_lost_frames_total", nil) - counter(before, "ecagent_lost_frames_total", nil)
	late := counter(after, "ecagent_late_answers_total", nil) - counter(before, "ecagent_late_answers_total", nil)
	return lost - late
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

// TestFaultsAreCountedAndRecovered injects each fault of the simulator into
// a running agent and asserts: the agent keeps running, the counters moved
// by exactly the number of faults injected, the bus is back in OP with the
// expected working counter within 1 s after the fault cleared, and the
// agent leaked neither goroutines nor file descriptors.
func TestFaultsAreCountedAndRecovered(t *testing.T) {
	// The reference set: EK1110 at 6 is the last slave, EL4132 at 5 has an
	// application controller (AL errors) and a mailbox.
	r := newFaultRig(t, referenceSet)
	f := r.seg.Faults() // of the first simulator run
	// Scrapes over fresh connections, so that the agent's HTTP keep-alive
	// goroutines do not count as leaks.
	quiet := func() map[string]*dto {
		time.Sleep(300 * time.Millisecond)
		http.DefaultClient.CloseIdleConnections()
		time.Sleep(100 * time.Millisecond)
		return scrape(t, r.addr)
	}
	base := quiet()
	goroutines0 := counter(base, "go_goroutines", nil)
	fds0 := counter(base, "process_open_fds", nil)

	t.Run("frames dropped", func(t *testing.T) {
		before := r.settle()
		f.DropNext(7)
		time.Sleep(200 * time.Millisecond)
		after := r.settle()
		r.alive()
		if got := dropped(before, after); got != 7 {
			t.Errorf("frames dropped (lost, less those that came back late) counted %v, injected 7 (simulator: %v)", got, f.Counts())
		}
		r.waitHealthy(time.Second)
	})

	t.Run("working counter corrupted", func(t *testing.T) {
		before := r.settle()
		f.CorruptWKC(4)
		time.Sleep(200 * time.Millisecond)
		after := r.settle()
		r.alive()
		if got := counter(after, "ecagent_wkc_errors_total", nil) - counter(before, "ecagent_wkc_errors_total", nil); got != 4 {
			t.Errorf("WKC errors counted %v, injected 4", got)
		}
		r.waitHealthy(time.Second)
	})

	t.Run("malformed answers", func(t *testing.T) {
		before := r.settle()
		f.CorruptLength(3)
		time.Sleep(200 * time.Millisecond)
		after := r.settle()
		r.alive()
		if got := dropped(before, after); got != 3 {
			t.Errorf("frames lost counted %v for 3 malformed answers", got)
		}
		r.waitHealthy(time.Second)
	})

	t.Run("answers late beyond the deadline", func(t *testing.T) {
		before := r.settle()
		delayed0 := f.Counts().Delayed
		f.Delay(7*time.Millisecond, 20) // the cycle waits 4.5 ms
		time.Sleep(500 * time.Millisecond)
		f.DelayOff()
		after := r.settle()
		r.alive()
		delayed := float64(f.Counts().Delayed - delayed0)
		lost := counter(after, "ecagent_lost_frames_total", nil) - counter(before, "ecagent_lost_frames_total", nil)
		late := counter(after, "ecagent_late_answers_total", nil) - counter(before, "ecagent_late_answers_total", nil)
		// Each delayed answer is a lost frame whose answer the next cycle
		// discards as late: on a quiet host the three are equal; a loaded
		// one adds late answers of its own, never fewer.
		if delayed == 0 || lost < delayed || late < delayed {
			t.Errorf("%v answers delayed: %v frames lost, %v late answers; want at least as many of each", delayed, lost, late)
		}
		t.Logf("%v answers delayed 7 ms: %v frames lost, %v late answers", delayed, lost, late)
		r.waitHealthy(time.Second)
	})

	t.Run("persistent loss raises the bus alarm", func(t *testing.T) {
		before := r.settle()
		f.DropNext(30) // bus.alarmcycles is 10
		time.Sleep(400 * time.Millisecond)
		after := r.settle()
		r.alive()
		ev := func(fams map[string]*dto, kind string) float64 {
			return counter(fams, "ecagent_bus_events_total", map[string]string{"kind": kind})
		}
		// The injected loss raises one alarm; a loaded host can add one of
		// its own (ten late cycles in a row), but every alarm is cleared.
		if a, c := ev(after, "bus-alarm")-ev(before, "bus-alarm"), ev(after, "bus-alarm-cleared")-ev(before, "bus-alarm-cleared"); a < 1 || c != a {
			t.Errorf("bus-alarm %v, bus-alarm-cleared %v; want at least 1, each cleared", a, c)
		}
		r.waitHealthy(time.Second)
	})

	t.Run("slave drops to SAFEOP+ERROR", func(t *testing.T) {
		ack := map[string]string{"kind": "al-acknowledged", "position": "5"}
		before := r.settle()
		start := time.Now()
		if err := f.ALError(5, 0x001B); err != nil {
			t.Fatal(err)
		}
		for counter(scrape(t, r.addr), "ecagent_bus_events_total", ack) == counter(before, "ecagent_bus_events_total", ack) {
			if time.Since(start) > time.Second {
				t.Fatalf("no al-acknowledged for slave 5 within 1 s; agent log:\n%s", tail(r.a.log(), 20))
			}
			time.Sleep(10 * time.Millisecond)
		}
		took := time.Since(start)
		r.waitHealthy(time.Second)
		after := r.settle()
		r.alive()
		if got := counter(after, "ecagent_bus_events_total", ack) - counter(before, "ecagent_bus_events_total", ack); got != 1 {
			t.Errorf("al-acknowledged for slave 5 counted %v, want 1", got)
		}
		t.Logf("acknowledged and back in OP within %v of the AL error (counter seen via scrapes)", took)
	})

	t.Run("last slave unplugged and plugged back", func(t *testing.T) {
		before := r.settle()
		if err := f.Disappear(6); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Second)
		for r.ready() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if r.ready() {
			t.Fatal("/readyz still ready with a slave missing")
		}
		time.Sleep(200 * time.Millisecond)
		if err := f.Return(6); err != nil {
			t.Fatal(err)
		}
		took := r.waitHealthy(time.Second)
		after := r.settle()
		r.alive()
		for _, kind := range []string{"slave-lost", "slave-reconnected"} {
			l := map[string]string{"kind": kind, "position": "6"}
			if got := counter(after, "ecagent_bus_events_total", l) - counter(before, "ecagent_bus_events_total", l); got != 1 {
				t.Errorf("%s for slave 6 counted %v, want 1; agent log:\n%s", kind, got, tail(r.a.log(), 15))
			}
		}
		t.Logf("back in OP %v after the slave returned", took)
	})

	t.Run("another device plugged in at the position", func(t *testing.T) {
		refused := map[string]string{"kind": "slave-refused", "position": "6"}
		before := r.settle()
		if err := f.Disappear(6); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		if err := f.ReturnAs(6, "EL2008"); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for counter(scrape(t, r.addr), "ecagent_bus_events_total", refused) == counter(before, "ecagent_bus_events_total", refused) {
			if time.Since(start) > time.Second {
				t.Fatalf("no slave-refused within 1 s; agent log:\n%s", tail(r.a.log(), 20))
			}
			time.Sleep(10 * time.Millisecond)
		}
		if r.ready() {
			t.Error("/readyz ready with a foreign device at position 6")
		}
		if addr := r.seg.Devices()[6].StationAddress(); addr != 0 {
			t.Errorf("the foreign device was given station address %#04x", addr)
		}
		if !strings.Contains(r.a.log(), "another device at a slave's position") {
			t.Error("the refusal is not in the agent's log")
		}
		// The right terminal goes back in.
		if err := f.Disappear(6); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if err := f.ReturnAs(6, "EK1110"); err != nil {
			t.Fatal(err)
		}
		took := r.waitHealthy(time.Second) // the refused position is looked at again every 250 ms
		after := r.settle()
		r.alive()
		if got := counter(after, "ecagent_bus_events_total", refused) - counter(before, "ecagent_bus_events_total", refused); got != 1 {
			t.Errorf("slave-refused counted %v, want 1", got)
		}
		t.Logf("the right terminal back in OP %v after it returned", took)
	})

	t.Run("link down and up", func(t *testing.T) {
		before := r.settle()
		run(t, "ip", "link", "set", r.w.MasterEnd, "down")
		time.Sleep(300 * time.Millisecond)
		run(t, "ip", "link", "set", r.w.MasterEnd, "up")
		took := r.waitHealthy(2 * time.Second)
		after := r.settle()
		r.alive()
		ev := func(fams map[string]*dto, kind string) float64 {
			return counter(fams, "ecagent_bus_events_total", map[string]string{"kind": kind})
		}
		if d, u := ev(after, "link-down")-ev(before, "link-down"), ev(after, "link-up")-ev(before, "link-up"); d != 1 || u != 1 {
			t.Errorf("link-down %v, link-up %v; want 1 and 1", d, u)
		}
		t.Logf("ready %v after the link came back", took)
	})

	t.Run("cycle process crashes", func(t *testing.T) {
		before := r.settle()
		pid := cyclePIDOf(r.shm)
		if pid <= 0 {
			t.Fatal("no cycle process PID in the bus description")
		}
		start := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for r.ready() && time.Since(start) < time.Second {
			time.Sleep(5 * time.Millisecond)
		}
		took := r.waitHealthy(3 * time.Second)
		after := r.settle()
		r.alive()
		for _, c := range []struct {
			name   string
			labels map[string]string
		}{
			{"ecagent_cycle_process_starts_total", nil},
			{"ecagent_bus_events_total", map[string]string{"kind": "cycle-died"}},
			{"ecagent_bus_events_total", map[string]string{"kind": "cycle-restarted"}},
		} {
			if got := counter(after, c.name, c.labels) - counter(before, c.name, c.labels); got != 1 {
				t.Errorf("%s%v moved by %v, want 1", c.name, c.labels, got)
			}
		}
		if cyclePIDOf(r.shm) == pid {
			t.Error("the bus description still names the killed cycle process")
		}
		t.Logf("a new cycle process in OP %v after the crash", took+time.Since(start)-took)
	})

	t.Run("simulator restarted: every slave powered on again", func(t *testing.T) {
		before := r.settle()
		r.stopSim()
		time.Sleep(200 * time.Millisecond)
		r.startSim()
		took := r.waitHealthy(time.Second)
		after := r.settle()
		r.alive()
		l := map[string]string{"kind": "slave-reconnected"}
		if got := counter(after, "ecagent_bus_events_total", l) - counter(before, "ecagent_bus_events_total", l); got != float64(len(referenceSet)) {
			t.Errorf("slave-reconnected counted %v, want %d", got, len(referenceSet))
		}
		t.Logf("back in OP %v after the simulator restarted", took)
	})

	// No leaks: the agent's goroutines and descriptors are where they were.
	// A connection the server is still closing can hold one for a moment:
	// the figures must come back to where they were, not stay above. The
	// MQTT client and the embedded broker run a varying handful of
	// goroutines (keep-alive timers, a writer per connection): ±4 was
	// measured across cycle restarts, so that much is not a leak; a leak
	// per fault would be many more after nine faults.
	const goroutineSlack = 4
	var g, n float64
	for range 10 {
		final := quiet()
		g, n = counter(final, "go_goroutines", nil), counter(final, "process_open_fds", nil)
		if g <= goroutines0+goroutineSlack && n <= fds0 {
			break
		}
	}
	if g > goroutines0+goroutineSlack || n > fds0 {
		t.Errorf("agent goroutines %v and open descriptors %v after the faults, %v and %v before: %v",
			g, n, goroutines0, fds0, openFDs(r.a.cmd.Process.Pid))
	}
}

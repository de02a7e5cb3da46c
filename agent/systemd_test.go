package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/agent/sdnotify"
	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/internal/testsupport"
	"github.com/ecagent/ecagent/shm"
)

func TestServiceNotifierFeedsTheWatchdogOnlyWhileTheCycleBeats(t *testing.T) {
	sock := testsupport.NewNotifySocket(t)
	env := map[string]string{sdnotify.SocketEnv: sock.Path, sdnotify.WatchdogUSecEnv: "200000"} // WatchdogSec=200ms
	sd := newServiceNotifierEnv(func(k string) string { return env[k] }, quiet)
	defer sd.close()
	if sd.every != 100*time.Millisecond {
		t.Fatalf("feeding every %v, want half of 200ms", sd.every)
	}
	seg, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	cp := &CycleProcess{seg: seg, pid: 4242, info: &contract.BusInfo{Period: time.Millisecond, Slaves: make([]contract.SlaveInfo, 7)}}
	seg.Heartbeat().Beat(1, shm.Now())

	sd.cycleRunning(cp)
	if got := sock.Next(time.Second); got != "READY=1\nSTATUS=cycling: 7 slaves, period 1ms, cycle process 4242" {
		t.Errorf("first notification %q", got)
	}
	if got := sock.Next(time.Second); got != "WATCHDOG=1" {
		t.Errorf("after READY=1: %q, want WATCHDOG=1", got)
	}
	sd.feedWatchdog(cp)
	if got := sock.Next(50 * time.Millisecond); got != "" {
		t.Errorf("fed again before a feed was due: %q", got)
	}

	steps := []struct {
		name string
		beat int64 // heartbeat age
		want string
	}{
		{"fresh heartbeat", 0, "WATCHDOG=1"},
		{"heartbeat 1s old", time.Second.Nanoseconds(), "WATCHDOG=1"},
		{"cycle stuck for 3s", 3 * time.Second.Nanoseconds(), ""},
		{"cycle beats again", 0, "WATCHDOG=1"},
	}
	for i, st := range steps {
		seg.Heartbeat().Beat(uint64(i+2), shm.Now()-st.beat)
		time.Sleep(110 * time.Millisecond)
		sd.feedWatchdog(cp)
		if got := sock.Next(50 * time.Millisecond); got != st.want {
			t.Errorf("%s: notification %q, want %q", st.name, got, st.want)
		}
	}

	// A restarted cycle is reported, but the unit was ready already.
	sd.cycleDown("the cycle process died")
	if got := sock.Next(time.Second); got != "STATUS=cycle down: the cycle process died" {
		t.Errorf("cycleDown: %q", got)
	}
	// This one refused to serve its maintenance socket: the status says so.
	cp.pid = 4343
	cp.info.Maintenance = contract.MaintenanceInfo{Socket: "/dev/shm/x.shm.d/ctl", Error: "belongs to user 65534"}
	sd.cycleRunning(cp)
	if got := sock.Next(time.Second); !strings.HasPrefix(got, "STATUS=cycling") || strings.Contains(got, "READY") ||
		!strings.HasSuffix(got, "; maintenance socket refused (see the log)") {
		t.Errorf("second cycleRunning: %q", got)
	}
	sock.Next(50 * time.Millisecond) // its watchdog feed
	sd.stopping()
	if got := sock.Next(time.Second); !strings.HasPrefix(got, "STOPPING=1\n") {
		t.Errorf("stopping: %q", got)
	}
}

func TestServiceNotifierOutsideSystemdDoesNothing(t *testing.T) {
	sd := newServiceNotifierEnv(func(string) string { return "" }, quiet)
	seg, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	cp := &CycleProcess{seg: seg, info: &contract.BusInfo{}}
	sd.cycleRunning(cp)
	sd.feedWatchdog(cp)
	sd.cycleDown("x")
	sd.stopping()
	sd.close()
	if sd.n != nil || sd.ready {
		t.Errorf("a notifier without NOTIFY_SOCKET became active: %+v", sd)
	}
}

// TestServiceNotifierWhileBringUpFails: an agent whose bus cannot be
// brought up keeps trying, so its unit must not stay "activating" until
// systemd's start timeout kills it: the first failure makes it ready with
// a status that says why, and the agent's loop feeds the watchdog while
// no cycle process runs; a cycle process in OP later is a status only.
func TestServiceNotifierWhileBringUpFails(t *testing.T) {
	sock := testsupport.NewNotifySocket(t)
	env := map[string]string{sdnotify.SocketEnv: sock.Path, sdnotify.WatchdogUSecEnv: "200000"}
	sd := newServiceNotifierEnv(func(k string) string { return env[k] }, quiet)
	defer sd.close()

	// Before the unit is ready, READY=1 comes first.
	sd.bringingUp()
	sd.feedWhileBringingUp()
	if got := sock.Next(50 * time.Millisecond); got != "" {
		t.Errorf("before READY=1: %q", got)
	}
	sd.bringUpFailed("bring-up failed 1 time(s) in a row (no-answer): no answer; trying again in 100ms")
	if got := sock.Next(time.Second); got != "READY=1\nSTATUS=bring-up failed 1 time(s) in a row (no-answer): no answer; trying again in 100ms" {
		t.Errorf("first failure: %q", got)
	}
	if got := sock.Next(time.Second); got != "WATCHDOG=1" {
		t.Errorf("after the first failure: %q, want WATCHDOG=1", got)
	}
	time.Sleep(110 * time.Millisecond)
	sd.feedWhileBringingUp()
	if got := sock.Next(time.Second); got != "WATCHDOG=1" {
		t.Errorf("waiting for the next attempt: %q, want WATCHDOG=1", got)
	}
	sd.bringingUp()
	if got := sock.Next(time.Second); got != "STATUS=bringing the bus up" {
		t.Errorf("the next attempt: %q", got)
	}
	sd.bringUpFailed("bring-up failed 2 time(s) in a row")
	if got := sock.Next(time.Second); got != "STATUS=bring-up failed 2 time(s) in a row" {
		t.Errorf("second failure: %q", got)
	}
	seg, err := shm.New(shm.DefaultLayout())
	if err != nil {
		t.Fatal(err)
	}
	seg.Heartbeat().Beat(1, shm.Now())
	sd.cycleRunning(&CycleProcess{seg: seg, pid: 4242, info: &contract.BusInfo{Period: time.Millisecond, Slaves: make([]contract.SlaveInfo, 7)}})
	if got := sock.Next(time.Second); got != "STATUS=cycling: 7 slaves, period 1ms, cycle process 4242" {
		t.Errorf("in OP after the failures: %q", got)
	}
}

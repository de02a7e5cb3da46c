package agent

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ecagent/ecagent/agent/sdnotify"
	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/shm"
)

// serviceNotifier keeps systemd informed when the agent runs as a
// Type=notify unit (deploy/systemd/ecagent.service): READY=1 once the
// cycle runs, WATCHDOG=1 only while the cycle's heartbeat is fresh, a
// STATUS= line, and STOPPING=1 on the way out. Outside systemd it does
// nothing.
//
// Feeding the watchdog from the cycle's heartbeat rather than from a timer
// makes systemd's watchdog mean "the machine is cycling": a cycle process
// that hangs, or an agent whose consumer loop hangs, stops the feeding and
// systemd restarts the agent.
type serviceNotifier struct {
	n   *sdnotify.Notifier
	log *slog.Logger
	// every is how often the watchdog is fed: half its timeout, as
	// systemd recommends; 0 when the unit has no watchdog.
	every    time.Duration
	lastFeed time.Time
	ready    bool
	failed   bool // a send failed and was logged; later failures are not
}

// newServiceNotifier reads $NOTIFY_SOCKET and $WATCHDOG_USEC.
func newServiceNotifier(log *slog.Logger) *serviceNotifier {
	return newServiceNotifierEnv(os.Getenv, log)
}

// newServiceNotifierEnv is newServiceNotifier reading the environment
// through getenv.
func newServiceNotifierEnv(getenv func(string) string, log *slog.Logger) *serviceNotifier {
	s := &serviceNotifier{log: log}
	n, err := sdnotify.New(getenv)
	if err != nil {
		log.Warn("cannot notify systemd; running as if not under it", "err", err)
		return s
	}
	if n == nil {
		return s
	}
	s.n = n
	s.every = n.WatchdogTimeout() / 2
	log.Info("running under systemd (Type=notify)", "watchdog", n.WatchdogTimeout())
	return s
}

// cycleRunning reports a (new) cycle process in cyclic operation: the
// first time, the unit becomes active (READY=1).
func (s *serviceNotifier) cycleRunning(cp *CycleProcess) {
	if s.n == nil {
		return
	}
	status := fmt.Sprintf("STATUS=cycling: %d slaves, period %v, cycle process %d", len(cp.info.Slaves), cp.info.Period, cp.pid)
	if cp.info.Maintenance.Error != "" {
		status += "; maintenance socket refused (see the log)"
	}
	if s.ready {
		s.send(status)
	} else {
		s.send("READY=1", status)
		s.ready = true
	}
	s.feed(cp.seg, time.Now())
}

// cycleDown reports that the cycle is not running (it is being
// restarted). The watchdog goes unfed meanwhile.
func (s *serviceNotifier) cycleDown(why string) {
	if s.n != nil {
		s.send("STATUS=cycle down: " + why)
	}
}

// feedWatchdog sends WATCHDOG=1 when a feed is due and the cycle's
// heartbeat is fresh. The agent calls it on every drain tick.
func (s *serviceNotifier) feedWatchdog(cp *CycleProcess) {
	if s.every > 0 && time.Since(s.lastFeed) >= s.every {
		s.feed(cp.seg, time.Now())
	}
}

func (s *serviceNotifier) feed(seg *shm.Segment, now time.Time) {
	if s.every == 0 || !cycleBeating(seg, rt.Now()) {
		return
	}
	s.send("WATCHDOG=1")
	s.lastFeed = now
}

// cycleBeating reports whether the cycle process beat within the last
// heartbeatFresh; now is CLOCK_MONOTONIC in nanoseconds (rt.Now).
func cycleBeating(seg *shm.Segment, now int64) bool {
	_, mono, ok := seg.Heartbeat().Read()
	return ok && now-mono < int64(heartbeatFresh)
}

// stopping tells systemd the agent is shutting down (STOPPING=1).
func (s *serviceNotifier) stopping() {
	if s.n != nil {
		s.send("STOPPING=1", "STATUS=stopping: taking the bus to INIT")
	}
}

func (s *serviceNotifier) close() { _ = s.n.Close() }

func (s *serviceNotifier) send(assignments ...string) {
	if err := s.n.Notify(assignments...); err != nil && !s.failed {
		s.failed = true
		s.log.Warn("notifying systemd failed (further failures not logged)", "err", err)
	}
}

package agent

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ecagent/ecagent/agent/sdnotify"
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

// bringingUp reports a cycle process started and bringing the bus up,
// once the unit is ready (a restart): before, READY=1 comes first.
func (s *serviceNotifier) bringingUp() {
	if s.n != nil && s.ready {
		s.send("STATUS=bringing the bus up")
	}
}

// bringUpFailed reports a failed bring-up, which the agent tries again
// without end. The first time, the unit becomes active (READY=1): the
// service runs and supervises its bus — whether the bus is ready is
// /readyz's to say, and STATUS= says why it is not — rather than staying
// in "activating" until systemd's start timeout kills an agent that is
// doing its job, and holding up every unit ordered after it.
func (s *serviceNotifier) bringUpFailed(status string) {
	if s.n == nil {
		return
	}
	if s.ready {
		s.send("STATUS=" + status)
	} else {
		s.send("READY=1", "STATUS="+status)
		s.ready = true
	}
	s.feedWhileBringingUp()
}

// feedWhileBringingUp sends WATCHDOG=1 when a feed is due while no cycle
// process runs cycles yet: one brings the bus up (within its time) or
// the next attempt waits for its turn. The agent's loop feeding it is
// what there is to watch then; a cycle process that runs and stops
// beating is not fed for (feedWatchdog).
func (s *serviceNotifier) feedWhileBringingUp() {
	// Before READY=1 the watchdog is not armed: systemd's start timeout
	// bounds the first bring-up, which ends (4 bus.statetimeout and 10 s
	// at most) in READY=1 either way.
	if s.ready && s.every > 0 && time.Since(s.lastFeed) >= s.every {
		s.send("WATCHDOG=1")
		s.lastFeed = time.Now()
	}
}

// cycleDown reports that the cycle is not running (it is being
// restarted).
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
	if s.every == 0 || !cycleBeating(seg, shm.Now()) {
		return
	}
	s.send("WATCHDOG=1")
	s.lastFeed = now
}

// cycleBeating reports whether the cycle process beat within the last
// heartbeatFresh; now is CLOCK_MONOTONIC in nanoseconds (shm.Now).
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

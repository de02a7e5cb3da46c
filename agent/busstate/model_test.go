package busstate

import (
	"strings"
	"testing"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/shm"
)

// clock is a test clock that advances one second per reading.
type clock struct{ t time.Time }

func (c *clock) now() time.Time {
	c.t = c.t.Add(time.Second)
	return c.t
}

func alWord(st esc.ALState, errBit bool) uint16 {
	var b [esc.ALStatusLen]byte
	esc.ALStatus{State: st, Error: errBit}.Encode(b[:])
	return uint16(b[0]) | uint16(b[1])<<8
}

func event(kind shm.EventKind, slave uint16, al uint16, code uint16, text string) shm.Event {
	ev := shm.Event{Kind: kind, Slave: slave, ALState: al, ALStatusCode: code}
	ev.SetText(text)
	return ev
}

// want is one slave's expected rendering.
type want struct {
	presence Presence
	al       string
	quality  Quality
}

func TestModel(t *testing.T) {
	slaves := []SlaveInfo{{0, "EK1100"}, {1, "EL2004"}, {2, "EL1014"}}
	op := want{PresencePresent, "OP", QualityGood}
	cases := []struct {
		name   string
		events []shm.Event
		down   bool // the cycle process died after the events
		want   []want
		ready  bool
		why    string // a part of Ready's reason
		sum    string
	}{
		{"bring-up", nil, false, []want{op, op, op}, true, "", "OP"},
		{"a slave lost is not OP and its data stale",
			[]shm.Event{event(shm.EventSlaveLost, 2, 0, 0, "does not answer")}, false,
			[]want{op, op, {PresenceLost, "NONE", QualityStale}}, false, "1 slave(s) not answering: 2 (EL1014)", "OP (1 lost)"},
		{"a lost slave reconnected is OP and good again",
			[]shm.Event{event(shm.EventSlaveLost, 2, 0, 0, ""), event(shm.EventSlaveReconnected, 2, 0, 0, "reconfigured, in OP")}, false,
			[]want{op, op, op}, true, "", "OP"},
		{"found again in PREOP is reconnecting, data stale",
			[]shm.Event{event(shm.EventSlaveLost, 1, 0, 0, ""), event(shm.EventSlaveFound, 1, 0, 0, ""),
				event(shm.EventSlaveState, 1, alWord(esc.StatePreOp, false), 0, "")}, false,
			[]want{op, {PresenceReconnecting, "PREOP", QualityStale}, op}, false, "slave 1 (EL2004) reconnecting (PREOP)", "OP (1 reconnecting)"},
		{"found again in SAFEOP: inputs are exchanged again",
			[]shm.Event{event(shm.EventSlaveLost, 1, 0, 0, ""), event(shm.EventSlaveFound, 1, 0, 0, ""),
				event(shm.EventSlaveState, 1, alWord(esc.StateSafeOp, false), 0, "")}, false,
			[]want{op, {PresenceReconnecting, "SAFEOP", QualityGood}, op}, false, "reconnecting (SAFEOP)", "OP (1 reconnecting)"},
		{"SAFEOP+ERR on one slave: that slave, with its code",
			[]shm.Event{event(shm.EventALError, 0, alWord(esc.StateSafeOp|esc.StateOp, true), 0, "bus"),
				event(shm.EventSlaveState, 1, alWord(esc.StateSafeOp, true), 0x001B, "")}, false,
			[]want{op, {PresencePresent, "SAFEOP+ERR", QualityGood}, op}, false, "slave 1 (EL2004) SAFEOP+ERR 0x001b (sync manager watchdog)", "MIXED(0x0c)+ERR"},
		{"the bus's AL status leaves OP before the slave's own read: not ready",
			[]shm.Event{event(shm.EventALError, 0, alWord(esc.StateSafeOp|esc.StateOp, true), 0, "bus")}, false,
			[]want{op, op, op}, false, "bus AL status MIXED(0x0c)+ERR: a slave left OP", "MIXED(0x0c)+ERR"},
		{"acknowledged: back in OP without the code",
			[]shm.Event{event(shm.EventSlaveState, 1, alWord(esc.StateSafeOp, true), 0x001B, ""),
				event(shm.EventALAcknowledged, 1, 0, 0x001B, "back in OP")}, false,
			[]want{op, op, op}, true, "", "OP"},
		{"a foreign device is refused, its data invalid",
			[]shm.Event{event(shm.EventSlaveLost, 2, 0, 0, ""), event(shm.EventSlaveRefused, 2, 0, 0, "EL2004 rev 0x00110000")}, false,
			[]want{op, op, {PresenceRefused, "NONE", QualityInvalid}}, false, "slave 2 (EL1014) refused: EL2004 rev 0x00110000 at its position", "OP (1 refused)"},
		{"the whole bus in SAFEOP",
			[]shm.Event{event(shm.EventStateChange, 0, alWord(esc.StateSafeOp, false), 0, "bus")}, false,
			[]want{{PresencePresent, "SAFEOP", QualityGood}, {PresencePresent, "SAFEOP", QualityGood}, {PresencePresent, "SAFEOP", QualityGood}},
			false, "slave 0 (EK1100) SAFEOP", "SAFEOP"},
		{"the whole bus in PREOP: no exchange, data stale",
			[]shm.Event{event(shm.EventStateChange, 0, alWord(esc.StatePreOp, false), 0, "bus")}, false,
			[]want{{PresencePresent, "PREOP", QualityStale}, {PresencePresent, "PREOP", QualityStale}, {PresencePresent, "PREOP", QualityStale}},
			false, "slave 2 (EL1014) PREOP", "PREOP"},
		{"link down: every slave stale",
			[]shm.Event{event(shm.EventLinkDown, 0, 0, 0, "")}, false,
			[]want{{PresencePresent, "OP", QualityStale}, {PresencePresent, "OP", QualityStale}, {PresencePresent, "OP", QualityStale}},
			false, "link down", "LINK-DOWN"},
		{"link back", []shm.Event{event(shm.EventLinkDown, 0, 0, 0, ""), event(shm.EventLinkUp, 0, 0, 0, "")}, false,
			[]want{op, op, op}, true, "", "OP"},
		{"bus alarm: data stale, not ready",
			[]shm.Event{event(shm.EventBusAlarm, 0, 0, 0, "frames lost")}, false,
			[]want{{PresencePresent, "OP", QualityStale}, {PresencePresent, "OP", QualityStale}, {PresencePresent, "OP", QualityStale}},
			false, "bus alarm: frames lost", "OP (alarm)"},
		{"bus alarm for the working counter: the answering slaves' data stays good",
			[]shm.Event{event(shm.EventBusAlarm, 0, 0, 0, shm.AlarmWorkingCounter), event(shm.EventSlaveLost, 2, 0, 0, "")}, false,
			[]want{op, op, {PresenceLost, "NONE", QualityStale}}, false, "1 slave(s) not answering: 2 (EL1014)", "OP (1 lost, alarm)"},
		{"the alarm's reason changes to the working counter: the answering slaves' data is good again",
			[]shm.Event{event(shm.EventBusAlarm, 0, 0, 0, "frames lost"), event(shm.EventSlaveLost, 2, 0, 0, ""),
				event(shm.EventBusAlarmChanged, 0, 0, 0, shm.AlarmWorkingCounter)}, false,
			[]want{op, op, {PresenceLost, "NONE", QualityStale}}, false, "1 slave(s) not answering: 2 (EL1014)", "OP (1 lost, alarm)"},
		{"bus alarm cleared",
			[]shm.Event{event(shm.EventBusAlarm, 0, 0, 0, "frames lost"), event(shm.EventBusAlarmCleared, 0, 0, 0, "")}, false,
			[]want{op, op, op}, true, "", "OP"},
		{"cycle process died", nil, true,
			[]want{{PresencePresent, "OP", QualityStale}, {PresencePresent, "OP", QualityStale}, {PresencePresent, "OP", QualityStale}},
			false, "cycle process down", "CYCLE-DOWN"},
		{"events of unknown slaves change nothing",
			[]shm.Event{event(shm.EventSlaveLost, 9, 0, 0, ""), event(shm.EventSlaveState, 9, alWord(esc.StateInit, false), 0, "")}, false,
			[]want{op, op, op}, true, "", "OP"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := &clock{t: time.Unix(1000, 0)}
			m := New(clk.now)
			m.Reset(slaves)
			for i := range c.events {
				m.Apply(&c.events[i])
			}
			if c.down {
				m.CycleDown()
			}
			b := m.Snapshot()
			for i, w := range c.want {
				s := b.Slaves[i]
				if s.Presence != w.presence || s.AL.String() != w.al || s.Quality != w.quality {
					t.Errorf("slave %d: %v %v %v, want %v %v %v", i, s.Presence, s.AL, s.Quality, w.presence, w.al, w.quality)
				}
				if s.Presence == PresenceLost && s.Operational() {
					t.Errorf("slave %d lost but operational", i)
				}
				if answers := b.Answering(i); answers != (w.presence == PresencePresent || w.presence == PresenceReconnecting) && !c.down && !strings.Contains(c.name, "link down") {
					t.Errorf("slave %d: Answering() = %v with presence %v", i, answers, w.presence)
				}
				if (c.down || strings.HasPrefix(c.name, "link down")) && (b.Answering(i) || b.ALState(i) != esc.StateNone) {
					t.Errorf("slave %d answers (AL state %v) with the link or the cycle down", i, b.ALState(i))
				}
			}
			ok, why := b.Ready()
			if ok != c.ready || !strings.Contains(why, c.why) {
				t.Errorf("Ready() = %v %q, want %v containing %q", ok, why, c.ready, c.why)
			}
			if got := b.Summary(); got != c.sum {
				t.Errorf("Summary() = %q, want %q", got, c.sum)
			}
		})
	}
}

// TestCycleStalled checks that a cycle process whose heartbeat stopped
// makes every slave's data stale and readiness name it, and that its
// return makes the data good again.
func TestCycleStalled(t *testing.T) {
	m := New(nil)
	m.Reset([]SlaveInfo{{0, "EK1100"}, {1, "EL1014"}})
	if m.SetCycleStalled(false) {
		t.Error("a change reported where there was none")
	}
	if !m.SetCycleStalled(true) {
		t.Error("no change reported for a stall")
	}
	b := m.Snapshot()
	for i := range b.Slaves {
		if b.Slaves[i].Quality != QualityStale || b.Answering(i) {
			t.Errorf("slave %d during a stall: %v, answering %v", i, b.Slaves[i].Quality, b.Answering(i))
		}
	}
	if ok, why := b.Ready(); ok || !strings.Contains(why, "not responding") || b.Summary() != "CYCLE-STALLED" {
		t.Errorf("during a stall: ready %v %q, summary %q", ok, why, b.Summary())
	}
	m.SetCycleStalled(false)
	if b = m.Snapshot(); b.Slaves[1].Quality != QualityGood {
		t.Errorf("after the stall: %v", b.Slaves[1].Quality)
	}
	if ok, _ := b.Ready(); !ok {
		t.Error("not ready after the stall")
	}
}

// TestStaleSince checks that Since is the moment the data stopped being
// good and does not move while it stays stale.
func TestStaleSince(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	m := New(clk.now)
	m.Reset([]SlaveInfo{{0, "EL1014"}})
	lost := event(shm.EventSlaveLost, 0, 0, 0, "")
	m.Apply(&lost)
	s, _ := m.Slave(0)
	since := s.Since
	if s.Quality != QualityStale || !since.After(time.Unix(1001, 0)) {
		t.Fatalf("after loss: %v since %v", s.Quality, since)
	}
	alarm := event(shm.EventBusAlarm, 0, 0, 0, "working counter off")
	m.Apply(&alarm)
	if s, _ = m.Slave(0); s.Since != since {
		t.Errorf("stale since moved from %v to %v while it stayed stale", since, s.Since)
	}
}

// TestVersion checks that Version moves on a change and only then.
func TestVersion(t *testing.T) {
	m := New(nil)
	m.Reset([]SlaveInfo{{0, "EL1014"}})
	v := m.Version()
	same := event(shm.EventStateChange, 0, alWord(esc.StateOp, false), 0, "bus")
	if m.Apply(&same) || m.Version() != v {
		t.Errorf("an event that changes nothing moved the version")
	}
	lost := event(shm.EventSlaveLost, 0, 0, 0, "")
	if !m.Apply(&lost) || m.Version() == v {
		t.Errorf("a lost slave did not move the version")
	}
}

func TestNames(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{PresencePresent.String(), "present"}, {PresenceLost.String(), "lost"},
		{PresenceRefused.String(), "refused"}, {PresenceReconnecting.String(), "reconnecting"},
		{PresenceUnknown.String(), "Presence(0)"},
		{QualityGood.String(), "good"}, {QualityStale.String(), "stale"}, {QualityInvalid.String(), "invalid"},
		{QualityUnknown.String(), "Quality(0)"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

// TestBringUpFailures: a model whose cycle process cannot bring the bus up
// says so, and why, on every output until a cycle process runs: starting,
// then each failure counted with its reason, the slaves of an earlier
// cycle process stale, and a Reset clears it all.
func TestBringUpFailures(t *testing.T) {
	clk := &clock{t: time.Unix(1000, 0)}
	m := New(clk.now)
	if ok, why := m.Ready(); ok || why != "cycle process down" {
		t.Errorf("before anything: ready %v %q", ok, why)
	}
	v := m.Version()
	m.BringingUp()
	if ok, why := m.Ready(); ok || why != "cycle process down: a new one is bringing the bus up" || m.Version() == v {
		t.Errorf("starting: ready %v %q, version moved %v", ok, why, m.Version() != v)
	}
	if b := m.Snapshot(); b.Summary() != "STARTING" {
		t.Errorf("starting: summary %q", b.Summary())
	}
	m.BringUpFailed(BringUpNoAnswer, "no answer to frame")
	m.BringingUp()
	v = m.Version()
	m.BringUpFailed(BringUpNotAsConfigured, "found 5 slaves on the segment, configuration expects 7")
	if m.Version() == v {
		t.Error("a failure did not change the version")
	}
	b := m.Snapshot()
	ok, why := b.Ready()
	if want := "cycle process down: bring-up failed 2 time(s) in a row (not-as-configured): found 5 slaves on the segment, configuration expects 7"; ok || why != want {
		t.Errorf("after two failures: ready %v %q, want %q", ok, why, want)
	}
	if b.Summary() != "CYCLE-DOWN (bring-up: not-as-configured)" || b.CycleRunning || b.BringUp.Failures != 2 {
		t.Errorf("after two failures: %q, %+v", b.Summary(), b.BringUp)
	}
	// A cycle process in OP clears the failures; one that dies and
	// cannot be brought up again leaves its slaves stale.
	m.Reset([]SlaveInfo{{0, "EK1100"}})
	if ok, _ := m.Ready(); !ok || m.Snapshot().BringUp != (BringUp{}) {
		t.Errorf("after Reset: ready %v, %+v", ok, m.Snapshot().BringUp)
	}
	m.CycleDown()
	m.BringingUp()
	m.BringUpFailed(BringUpLink, "no such interface")
	b = m.Snapshot()
	if b.Slaves[0].Quality != QualityStale || b.BringUp.Failures != 1 || b.Answering(0) {
		t.Errorf("after a death and a failed bring-up: %+v", b)
	}
	for _, r := range BringUpReasons {
		if ParseBringUpReason(r.String()) != r {
			t.Errorf("%v does not parse back", r)
		}
	}
	if ParseBringUpReason("something new") != BringUpFailed {
		t.Error("an unknown reason is not BringUpFailed")
	}
}

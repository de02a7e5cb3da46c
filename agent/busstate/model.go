package busstate

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/ecagent/ecagent/contract"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/shm"
)

// SlaveInfo names a configured slave for Reset.
type SlaveInfo struct {
	Position int
	Name     string
}

// Model holds the Bus and folds the cycle process's events into it. One
// goroutine applies events (Reset, Apply, CycleDown); any goroutine may
// read (Snapshot, Slave, Ready, Version). Create it with New.
type Model struct {
	now func() time.Time

	mu      sync.RWMutex
	bus     Bus
	good    []bool // per slave: its data was Good since it was configured
	version uint64
}

// New returns a model with no cycle process yet; now is the clock the
// Since times come from (time.Now when nil).
func New(now func() time.Time) *Model {
	if now == nil {
		now = time.Now
	}
	return &Model{now: now}
}

// Reset starts the model over for a (new) cycle process that brought the
// given slaves to OP: every slave present in OP, its data good, the cycle
// running, the link up.
func (m *Model) Reset(slaves []SlaveInfo) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bus = Bus{CycleRunning: true, LinkUp: true, State: esc.ALStatus{State: esc.StateOp}}
	m.bus.Slaves = make([]Slave, len(slaves))
	m.good = make([]bool, len(slaves))
	for i, s := range slaves {
		m.bus.Slaves[i] = Slave{Position: s.Position, Name: s.Name, Presence: PresencePresent,
			AL: esc.ALStatus{State: esc.StateOp}, Quality: QualityGood, Since: now}
		m.good[i] = true
	}
	m.version++
}

// CycleDown records that the cycle process died: nothing is exchanged
// until the next Reset, so every slave's data is stale from now.
func (m *Model) CycleDown() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bus.CycleRunning {
		m.bus.CycleRunning = false
		m.version++
	}
	m.settle(m.now())
}

// BringingUp records that a cycle process was started and is bringing the
// bus up: no cycle runs yet; failures before it still say why the last
// attempts failed.
func (m *Model) BringingUp() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bus.CycleRunning || !m.bus.BringUp.Starting {
		m.bus.CycleRunning, m.bus.BringUp.Starting = false, true
		m.version++
	}
	m.settle(m.now())
}

// BringUpFailed records that a cycle process failed to bring the bus up,
// for reason, in the words of text: no cycle runs, and until the next
// Reset every output says why. The slaves of an earlier cycle process
// stay as they were last known, their data stale.
func (m *Model) BringUpFailed(reason BringUpReason, text string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := &m.bus.BringUp
	m.bus.CycleRunning = false
	b.Starting = false
	b.Failures++
	b.Reason, b.Error = reason, text
	m.version++
	m.settle(m.now())
}

// SetCycleStalled records whether the cycle process stopped beating while
// it exists, and reports whether that changed anything.
func (m *Model) SetCycleStalled(stalled bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bus.CycleStalled == stalled {
		return false
	}
	m.bus.CycleStalled = stalled
	m.version++
	m.settle(m.now())
	return true
}

// Apply folds one event of the cycle process into the model, as its
// kind's Effect in the event catalogue (package contract) says, and
// reports whether it changed anything an output shows.
func (m *Model) Apply(ev *shm.Event) bool {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.version
	if e, ok := ev.Kind.Info(); ok && e.Origin == contract.OriginCycle {
		if e.PerSlave {
			if s := m.slave(int(ev.Slave)); s != nil {
				m.applySlave(e.Effect, s, ev)
			}
		} else {
			m.applyBus(e.Effect, ev)
		}
	}
	m.settle(now)
	return m.version != before
}

// applyBus folds an effect on the bus as a whole.
func (m *Model) applyBus(e contract.Effect, ev *shm.Event) {
	switch e {
	case contract.EffectBusAL:
		m.busState(decodeAL(ev.ALState))
	case contract.EffectAlarmRaised:
		m.setAlarm(true, ev.TextString())
	case contract.EffectAlarmCleared:
		m.setAlarm(false, "")
	case contract.EffectLinkDown, contract.EffectLinkUp:
		if up := e == contract.EffectLinkUp; m.bus.LinkUp != up {
			m.bus.LinkUp = up
			m.version++
		}
	}
}

// applySlave folds an effect on the configured slave s.
func (m *Model) applySlave(e contract.Effect, s *Slave, ev *shm.Event) {
	switch e {
	case contract.EffectSlaveAL:
		m.slaveState(s, decodeAL(ev.ALState), esc.ALStatusCode(ev.ALStatusCode))
	case contract.EffectLost:
		m.setPresence(s, PresenceLost)
		m.setAL(s, esc.ALStatus{}, 0)
		m.setFound(s, "")
	case contract.EffectFound:
		// Back at its address with its configuration kept; the next
		// per-slave read says in which state.
		if !s.Operational() {
			m.setPresence(s, PresenceReconnecting)
			m.setFound(s, "")
		}
	case contract.EffectBackInOP:
		m.setPresence(s, PresencePresent)
		m.setAL(s, esc.ALStatus{State: esc.StateOp}, 0)
		m.setFound(s, "")
	case contract.EffectRefused:
		m.setPresence(s, PresenceRefused)
		m.setAL(s, esc.ALStatus{}, 0)
		m.setFound(s, ev.TextString())
	case contract.EffectRecoveryFailed:
		if s.Up() && ev.ALStatusCode != 0 {
			al := s.AL
			al.Error = true
			m.setAL(s, al, esc.ALStatusCode(ev.ALStatusCode))
		}
	}
}

// slaveState takes a slave's AL status as a per-slave read found it: a
// lost slave that answers is reconnecting, and present again in OP
// without an error. A refused slave's is another device's: not ours.
func (m *Model) slaveState(s *Slave, al esc.ALStatus, code esc.ALStatusCode) {
	if s.Presence == PresenceRefused {
		return
	}
	m.setAL(s, al, code)
	if s.Presence == PresenceLost {
		s.Presence = PresenceReconnecting
	}
	if s.Presence == PresenceReconnecting && s.AL.State == esc.StateOp && !s.AL.Error {
		s.Presence = PresencePresent
	}
}

// setAlarm raises the bus alarm for text, or clears it.
func (m *Model) setAlarm(raised bool, text string) {
	if m.bus.Alarm != raised || m.bus.AlarmText != text {
		m.bus.Alarm, m.bus.AlarmText = raised, text
		m.version++
	}
}

// setFound records which other device is at a refused slave's position
// ("" for none).
func (m *Model) setFound(s *Slave, found string) {
	if s.Found != found {
		s.Found = found
		m.version++
	}
}

// busState takes the bus's AL status as the cycle read it (the OR of every
// answering slave's). A single valid state is every answering slave's
// state; without the error bit, no answering slave has an error. Which
// slave has the error when the bit is set is the per-slave read's to say
// (EventSlaveState).
func (m *Model) busState(al esc.ALStatus) {
	if m.bus.State != al {
		m.bus.State = al
		m.version++
	}
	if !al.State.Valid() {
		return
	}
	for i := range m.bus.Slaves {
		s := &m.bus.Slaves[i]
		if s.Presence != PresencePresent {
			continue
		}
		next := esc.ALStatus{State: al.State, Error: s.AL.Error && al.Error}
		code := s.ALStatusCode
		if !next.Error {
			code = 0
		}
		m.setAL(s, next, code)
	}
}

func (m *Model) setAL(s *Slave, al esc.ALStatus, code esc.ALStatusCode) {
	if !al.Error {
		code = 0
	}
	al.IDLoaded = false
	if s.AL != al || s.ALStatusCode != code {
		s.AL, s.ALStatusCode = al, code
		m.version++
	}
}

func (m *Model) setPresence(s *Slave, p Presence) {
	if s.Presence != p {
		s.Presence = p
		m.version++
	}
}

// settle derives every slave's data quality from its presence, its state
// and the bus, keeping Since where the quality did not change.
func (m *Model) settle(now time.Time) {
	// A working counter off leaves the data of the slaves that answer
	// exchanged (the ones that do not are lost); frames lost exchange
	// nothing.
	exchanging := m.bus.CycleRunning && !m.bus.CycleStalled && m.bus.LinkUp &&
		!(m.bus.Alarm && m.bus.AlarmText != shm.AlarmWorkingCounter)
	for i := range m.bus.Slaves {
		s := &m.bus.Slaves[i]
		q := QualityInvalid
		switch {
		case s.Presence == PresenceRefused:
			m.good[i] = false // another device: nothing of ours to show
		case exchanging && s.Up() && (s.AL.State == esc.StateSafeOp || s.AL.State == esc.StateOp):
			q = QualityGood
			m.good[i] = true
		case m.good[i]:
			q = QualityStale
		}
		if s.Quality != q {
			s.Quality, s.Since = q, now
			m.version++
		}
	}
}

func (m *Model) slave(pos int) *Slave {
	for i := range m.bus.Slaves {
		if m.bus.Slaves[i].Position == pos {
			return &m.bus.Slaves[i]
		}
	}
	return nil
}

// Snapshot returns a copy of the bus.
func (m *Model) Snapshot() Bus {
	m.mu.RLock()
	defer m.mu.RUnlock()
	b := m.bus
	b.Slaves = append([]Slave(nil), m.bus.Slaves...)
	return b
}

// Slave returns the slave at ring position pos, and false when no
// configured slave is there.
func (m *Model) Slave(pos int) (Slave, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if s := m.slave(pos); s != nil {
		return *s, true
	}
	return Slave{}, false
}

// Ready is Bus.Ready of the current state.
func (m *Model) Ready() (ok bool, why string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.bus.Ready()
}

// Version counts the changes of the model: it differs between two calls
// when anything an output shows changed between them.
func (m *Model) Version() uint64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

func decodeAL(v uint16) esc.ALStatus {
	var b [esc.ALStatusLen]byte
	binary.LittleEndian.PutUint16(b[:], v)
	return esc.DecodeALStatus(b[:])
}

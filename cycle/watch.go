package cycle

// What the cycle tells the agent about the bus and the link, as events in
// the segment: the link refusing frames, the bus alarm, changes of the bus
// state the in-cycle AL status read shows, and frames the master
// discarded. Each fills the engine's pre-allocated event and pushes it; none
// allocates or waits.

import (
	"time"

	"github.com/ecagent/ecagent/cycle/rt"
	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/master"
	"github.com/ecagent/ecagent/shm"
)

// reportDiscarded reports the frames the master discarded since the last
// report, by reason, at most once a second: a flood of junk makes a few
// events (shm.EventFramesDiscarded), not one per frame.
func (e *Engine) reportDiscarded(now int64) {
	if now-e.discardedAt < int64(time.Second) {
		return
	}
	e.discardedAt = now
	st := e.m.Stats()
	counts := [3]uint64{st.InvalidFrames, st.ForeignFrames, st.MismatchedAnswers}
	for i, n := range counts {
		if n <= e.discarded[i] {
			continue
		}
		e.event = shm.Event{Cycle: e.cycle, Time: now, Kind: shm.EventFramesDiscarded, Value: n - e.discarded[i]}
		e.event.SetText(discardReason(i))
		e.seg.Events().Push(&e.event)
		e.discarded[i] = n
	}
}

// linkEvery is how often the cycle reads the link's receive counters: a
// system call (getsockopt), so not every cycle.
const linkEvery = time.Second

// publishLink reads the link's receive counters (for a raw socket the
// kernel's: frames its filter passed, those dropped because the receive
// queue was full) and stores them in the heartbeat line, where the agent
// exports them. One raw system call, no allocation, no lock.
func (e *Engine) publishLink(now int64) {
	e.linkAt = now
	if st, ok := e.m.LinkStats(); ok {
		e.seg.Heartbeat().CountLink(st.Packets, st.Drops)
	}
}

// discardReason names count i of Engine.discarded in events.
func discardReason(i int) string {
	switch i {
	case 0:
		return "invalid"
	case 1:
		return "foreign"
	}
	return "mismatched"
}

// watchLink reports the link refusing the cyclic frames, and its return.
func (e *Engine) watchLink(res *master.CycleResult) {
	linkErr := res.Err != nil && res.Err != master.ErrFrameLost && res.Err != master.ErrWKCMismatch
	if linkErr == e.linkDown {
		return
	}
	e.linkDown = linkErr
	if linkErr {
		e.note(shm.EventLinkDown, 0, "cyclic frames cannot be sent")
	} else {
		e.note(shm.EventLinkUp, 0, "")
	}
}

// watchAlarm raises the bus alarm after Config.AlarmCycles bad cycles in a
// row and clears it after as many clean ones. A raised alarm says what is
// wrong now: after as many cycles in a row of the other kind (frames back
// but the working counter still off — a slave lost while the host also
// lost a streak of frames — or the reverse) its reason changes
// (EventBusAlarmChanged), since lost frames make every slave's data stale
// and a wrong working counter only the missing slaves'.
func (e *Engine) watchAlarm(res *master.CycleResult) {
	n := e.cfg.AlarmCycles
	lost := res.Lost > 0
	switch {
	case lost:
		e.badRun, e.goodRun, e.lostRun, e.wkcRun = e.badRun+1, 0, e.lostRun+1, 0
	case res.WKC != res.ExpectedWKC:
		e.badRun, e.goodRun, e.lostRun, e.wkcRun = e.badRun+1, 0, 0, e.wkcRun+1
	default:
		e.badRun, e.goodRun, e.lostRun, e.wkcRun = 0, e.goodRun+1, 0, 0
	}
	switch {
	case n <= 0:
	case !e.alarm && e.badRun >= n:
		e.alarm = true
		e.raiseAlarm(shm.EventBusAlarm, lost, e.badRun)
	case e.alarm && e.goodRun >= n:
		e.alarm = false
		e.event = shm.Event{Cycle: e.cycle, Time: rt.Now(), Kind: shm.EventBusAlarmCleared, Value: uint64(e.goodRun)}
		e.seg.Events().Push(&e.event)
	case e.alarm && e.alarmLost && e.wkcRun >= n:
		e.raiseAlarm(shm.EventBusAlarmChanged, false, e.wkcRun)
	case e.alarm && !e.alarmLost && e.lostRun >= n:
		e.raiseAlarm(shm.EventBusAlarmChanged, true, e.lostRun)
	}
}

// raiseAlarm reports the bus alarm (kind EventBusAlarm) or a change of its
// reason (EventBusAlarmChanged), for lost frames or for the working
// counter, after cycles bad cycles.
func (e *Engine) raiseAlarm(kind shm.EventKind, lost bool, cycles int) {
	e.alarmLost = lost
	text := shm.AlarmWorkingCounter
	if lost {
		text = shm.AlarmFramesLost
	}
	e.event = shm.Event{Cycle: e.cycle, Time: rt.Now(), Kind: kind, Value: uint64(cycles)}
	e.event.SetText(text)
	e.seg.Events().Push(&e.event)
}

// watchBus reports changes of the bus state that the in-cycle AL status
// read shows: a change of state, an error indication. Which slave dropped
// out or came back is the recovery worker's to find and report (a
// per-slave read), not the cycle's.
func (e *Engine) watchBus(res *master.CycleResult) {
	if !res.StatusRead {
		return // nothing known this cycle; lost frames are in the sample
	}
	var errBit uint32
	if res.ALError {
		errBit = 1
	}
	bus := uint32(res.Responding)<<16 | errBit<<8 | uint32(res.ALStates)
	if bus == e.lastBus {
		return
	}
	prev, known := e.lastBus, e.busKnown
	e.lastBus, e.busKnown = bus, true
	if !known {
		return // the first read: the baseline
	}
	if res.ALError && prev>>8&1 == 0 {
		e.noteState(shm.EventALError, res.ALStates, true)
	} else if uint8(prev) != res.ALStates || prev>>8&1 != errBit {
		e.noteState(shm.EventStateChange, res.ALStates, res.ALError)
	}
}

func (e *Engine) noteState(kind shm.EventKind, states uint8, errFlag bool) {
	st := esc.ALStatus{State: esc.ALState(states), Error: errFlag}
	var b [esc.ALStatusLen]byte
	st.Encode(b[:])
	e.event = shm.Event{Cycle: e.cycle, Time: rt.Now(), Kind: kind, ALState: uint16(b[0]) | uint16(b[1])<<8}
	e.event.SetText("bus")
	e.seg.Events().Push(&e.event)
}

func (e *Engine) note(kind shm.EventKind, slave uint16, text string) {
	e.event = shm.Event{Cycle: e.cycle, Time: rt.Now(), Kind: kind, Slave: slave}
	e.event.SetText(text)
	e.seg.Events().Push(&e.event)
}

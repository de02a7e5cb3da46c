package shm

import (
	"strconv"
	"unsafe"
)

// EventSize is the size of an Event in the ring: one cache line.
const EventSize = 64

// EventTextSize is the capacity of Event.Text in bytes.
const EventTextSize = 32

// Compile-time check that Event is exactly EventSize bytes.
var (
	_ [EventSize - unsafe.Sizeof(Event{})]byte
	_ [unsafe.Sizeof(Event{}) - EventSize]byte
)

// Event is something the cycle reports to the agent besides the per-cycle
// samples: a slave changing AL state, an error, the answer to a command.
//
// Event holds no pointers and has a fixed layout (pinned by
// TestGoldenLayout), because it lives in shared memory.
type Event struct {
	// Cycle is the cycle number the event happened in.
	Cycle uint64
	// Time is the CLOCK_MONOTONIC time of the event in nanoseconds.
	Time int64
	// Value is a kind-dependent number: the Command.Seq answered by
	// EventCommandDone and EventCommandRejected.
	Value uint64
	// Kind says what happened.
	Kind EventKind
	// Slave is the position of the slave concerned (0 is the first).
	Slave uint16
	// ALState is the slave's AL status register (0x0130) value.
	ALState uint16
	// ALStatusCode is the slave's AL status code (0x0134), 0 if none.
	ALStatusCode uint16
	// Text is a short NUL-padded note; use SetText and TextString.
	Text [EventTextSize]byte
}

// EventKind says what an Event reports.
type EventKind uint16

// Event kinds. The zero value is invalid.
const (
	// EventInvalid is the zero EventKind.
	EventInvalid EventKind = iota
	// EventStateChange: the slave's AL state changed to ALState.
	EventStateChange
	// EventALError: the slave reports an AL error with ALStatusCode.
	EventALError
	// EventSlaveLost: the slave stopped answering.
	EventSlaveLost
	// EventSlaveFound: the slave answers again.
	EventSlaveFound
	// EventCommandDone: the command with Seq == Value was applied.
	EventCommandDone
	// EventCommandRejected: the command with Seq == Value was refused;
	// Text says why.
	EventCommandRejected
	// EventCycleStarted: the cycle process entered cyclic operation.
	EventCycleStarted
	// EventNote: free text in Text.
	EventNote
	// EventEmergency: the slave sent a CoE emergency message; Value holds
	// it as EmergencyValue packs it (error code, error register, data).
	EventEmergency
	// EventDriveState: the CiA 402 drive at Slave changed state; Value is
	// the new state's number (see package master/cia402), Text its name.
	EventDriveState
	// EventDriveFault: the drive at Slave went to fault; Value is its
	// error code (object 0x603F), Text the state name.
	EventDriveFault
	// EventDriveFaultCleared: the drive at Slave left the fault state
	// after a fault reset.
	EventDriveFaultCleared
	// EventBusAlarm: frames were lost, or the working counter was off, in
	// more consecutive cycles than bus.alarm allows; Text says which,
	// Value how many cycles.
	EventBusAlarm
	// EventBusAlarmCleared: the bus ran clean again for as many cycles.
	EventBusAlarmCleared
	// EventSlaveReconnected: the slave at Slave came back and was
	// reconfigured and brought to OP (hot reconnect); Value is the time
	// it took in ns.
	EventSlaveReconnected
	// EventSlaveRefused: another device appeared at Slave's position; it
	// was not configured. Text names it.
	EventSlaveRefused
	// EventALAcknowledged: the slave's AL error (code in ALStatusCode) was
	// acknowledged and the slave is back in OP.
	EventALAcknowledged
	// EventRecoveryFailed: the slave keeps refusing to return to OP
	// (ALStatusCode); Value counts the attempts so far. Retries continue
	// with back-off.
	EventRecoveryFailed
	// EventLinkDown: the cyclic frames cannot be sent (the link is down);
	// EventLinkUp: they can again.
	EventLinkDown
	EventLinkUp
	// EventSlaveState: a per-slave read of the slave at Slave found its AL
	// status (ALState) and AL status code (ALStatusCode) changed since the
	// last report: the recovery worker reports it, so that which slave is
	// in which state is known even when the in-cycle read (the OR of every
	// slave's state) cannot tell.
	EventSlaveState
	// EventFramesDiscarded: received frames were discarded in the last
	// second or more; Value is how many, Text why: "invalid" (not an
	// EtherCAT datagram frame), "foreign" (from another source than the
	// segment) or "mismatched" (from the segment's address, but not an
	// answer to a frame sent). At most one per reason and second, so a
	// flood makes a few events, not one per frame.
	EventFramesDiscarded
	// EventMaintenance: a maintenance request through the cycle's control
	// socket changed the slave at Slave (register or SII write, alias,
	// state request); Value is the uid of the requesting process, Text
	// what was done (e.g. "reg write 0x0120").
	EventMaintenance
	// EventErrorCounters: the ESC error counters (0x0300–0x0313, 20
	// bytes, as the ESC keeps them) of the slave at Slave changed; Text
	// holds the block. The cycle process reads them once a second.
	EventErrorCounters
	// EventBusAlarmChanged: the raised bus alarm's reason changed (Text:
	// frames lost, or the working counter off) after Value cycles of the
	// new kind in a row; the alarm stays raised, and one
	// EventBusAlarmCleared still ends it.
	EventBusAlarmChanged
)

// The texts of an EventBusAlarm: what made the cycles bad. Frames lost
// means nothing was exchanged; a working counter off means the frames came
// back but some slave did not process its part (which slave, a per-slave
// read tells).
const (
	AlarmFramesLost     = "frames lost"
	AlarmWorkingCounter = "working counter off"
)

// EmergencyValue packs a CoE emergency message into an Event.Value: the
// error code in bits 0–15, the error register in bits 16–23 and the five
// manufacturer-specific bytes in bits 24–63.
func EmergencyValue(code uint16, register uint8, data [5]byte) uint64 {
	v := uint64(code) | uint64(register)<<16
	for i, b := range data {
		v |= uint64(b) << (24 + 8*i)
	}
	return v
}

// Emergency unpacks an EventEmergency's Value (see EmergencyValue).
func (e *Event) Emergency() (code uint16, register uint8, data [5]byte) {
	for i := range data {
		data[i] = byte(e.Value >> (24 + 8*i))
	}
	return uint16(e.Value), uint8(e.Value >> 16), data
}

// String names k.
func (k EventKind) String() string {
	switch k {
	case EventInvalid:
		return "invalid"
	case EventStateChange:
		return "state-change"
	case EventALError:
		return "al-error"
	case EventSlaveLost:
		return "slave-lost"
	case EventSlaveFound:
		return "slave-found"
	case EventCommandDone:
		return "command-done"
	case EventCommandRejected:
		return "command-rejected"
	case EventCycleStarted:
		return "cycle-started"
	case EventNote:
		return "note"
	case EventEmergency:
		return "emergency"
	case EventDriveState:
		return "drive-state"
	case EventDriveFault:
		return "drive-fault"
	case EventDriveFaultCleared:
		return "drive-fault-cleared"
	case EventBusAlarm:
		return "bus-alarm"
	case EventBusAlarmCleared:
		return "bus-alarm-cleared"
	case EventBusAlarmChanged:
		return "bus-alarm-changed"
	case EventSlaveReconnected:
		return "slave-reconnected"
	case EventSlaveRefused:
		return "slave-refused"
	case EventALAcknowledged:
		return "al-acknowledged"
	case EventRecoveryFailed:
		return "recovery-failed"
	case EventLinkDown:
		return "link-down"
	case EventLinkUp:
		return "link-up"
	case EventSlaveState:
		return "slave-state"
	case EventFramesDiscarded:
		return "frames-discarded"
	case EventErrorCounters:
		return "error-counters"
	case EventMaintenance:
		return "maintenance"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// SetText stores s in e.Text, cut to EventTextSize bytes and NUL-padded.
// It does not allocate, so the cycle may call it.
func (e *Event) SetText(s string) {
	n := copy(e.Text[:], s)
	clear(e.Text[n:])
}

// TextString returns e.Text up to its first NUL byte.
func (e *Event) TextString() string {
	for i, b := range e.Text {
		if b == 0 {
			return string(e.Text[:i])
		}
	}
	return string(e.Text[:])
}

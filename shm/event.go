package shm

import (
	"unsafe"

	"github.com/ecagent/ecagent/contract"
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

// EventKind says what an Event reports: the kinds, their names and how
// every output renders them are the event catalogue of package contract.
type EventKind = contract.EventKind

// The event kinds of the cycle process (see package contract), under the
// names their users know them by.
const (
	EventInvalid           = contract.EventInvalid
	EventStateChange       = contract.EventStateChange
	EventALError           = contract.EventALError
	EventSlaveLost         = contract.EventSlaveLost
	EventSlaveFound        = contract.EventSlaveFound
	EventCommandDone       = contract.EventCommandDone
	EventCommandRejected   = contract.EventCommandRejected
	EventCycleStarted      = contract.EventCycleStarted
	EventNote              = contract.EventNote
	EventEmergency         = contract.EventEmergency
	EventDriveState        = contract.EventDriveState
	EventDriveFault        = contract.EventDriveFault
	EventDriveFaultCleared = contract.EventDriveFaultCleared
	EventBusAlarm          = contract.EventBusAlarm
	EventBusAlarmCleared   = contract.EventBusAlarmCleared
	EventSlaveReconnected  = contract.EventSlaveReconnected
	EventSlaveRefused      = contract.EventSlaveRefused
	EventALAcknowledged    = contract.EventALAcknowledged
	EventRecoveryFailed    = contract.EventRecoveryFailed
	EventLinkDown          = contract.EventLinkDown
	EventLinkUp            = contract.EventLinkUp
	EventSlaveState        = contract.EventSlaveState
	EventFramesDiscarded   = contract.EventFramesDiscarded
	EventMaintenance       = contract.EventMaintenance
	EventErrorCounters     = contract.EventErrorCounters
	EventBusAlarmChanged   = contract.EventBusAlarmChanged
	EventMaintenanceState  = contract.EventMaintenanceState
)

// The texts of an EventBusAlarm (see contract.AlarmFramesLost).
const (
	AlarmFramesLost     = contract.AlarmFramesLost
	AlarmWorkingCounter = contract.AlarmWorkingCounter
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

// Package contract is what the cycle process and the agent agree on
// besides the layout of shared memory (package shm): the vocabulary of
// the events the product reports. It imports no package of the project,
// so both processes, and every output of the agent, build on it.
//
// (This comment stands here until the package's doc.go comes with the
// rest of the contract: configuration, bus description, exit codes.)
package contract

import (
	"log/slog"
	"strconv"
	"strings"
)

// EventKind says what an event reports. The kinds of the cycle process
// (OriginCycle) are the numbers of shm.Event.Kind: they cross shared
// memory, so a kind keeps its number for ever and a new one takes the
// next. The zero value is invalid.
type EventKind uint16

// The event kinds of the cycle process, written to the event ring.
const (
	// EventInvalid is the zero EventKind.
	EventInvalid EventKind = iota
	// EventStateChange: the bus's AL state (the OR of every answering
	// slave's) changed to ALState.
	EventStateChange
	// EventALError: the bus's AL status reports an error with
	// ALStatusCode.
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
	// EventNote: free text about the bus in Text.
	EventNote
	// EventEmergency: the slave sent a CoE emergency message; Value holds
	// it as shm.EmergencyValue packs it (error code, error register,
	// data).
	EventEmergency
	// EventDriveState: the CiA 402 drive at Slave changed state; Value is
	// the new state's number (see package ethercat/cia402/state), Text its
	// name.
	EventDriveState
	// EventDriveFault: the drive at Slave went to fault; Value is its
	// error code (object 0x603F), Text the state name.
	EventDriveFault
	// EventDriveFaultCleared: the drive at Slave left the fault state
	// after a fault reset; Value is its state's number, Text its name.
	EventDriveFaultCleared
	// EventBusAlarm: frames were lost, or the working counter was off, in
	// more consecutive cycles than bus.alarm allows; Text says which
	// (AlarmFramesLost, AlarmWorkingCounter), Value how many cycles.
	EventBusAlarm
	// EventBusAlarmCleared: the bus ran clean again for Value cycles.
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
	// EventLinkDown: the cyclic frames cannot be sent (the link is down).
	EventLinkDown
	// EventLinkUp: the cyclic frames can be sent again.
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
	// EventMaintenanceState: a maintenance request through the cycle's
	// control socket takes the slave at Slave to another AL state on
	// purpose (a state request, BOOT for an FoE transfer and back):
	// ALState is the state requested, Value the uid of the requesting
	// process, Text what is done ("foe write fw.bin"). Reported before
	// the slave leaves its state, so that what follows (the slave out of
	// OP, recovery taking it back) reads as maintenance, not a fault.
	EventMaintenanceState

	// numCycleKinds counts the kinds of the cycle process: a new one
	// goes above it.
	numCycleKinds
)

// The event kinds of the agent itself (OriginAgent). They never cross
// shared memory: their numbers are the agent's own, apart from the cycle
// process's, and may change.
const (
	// EventCycleDied: the running cycle process died; the agent starts
	// another after a back-off.
	EventCycleDied EventKind = 0x8000 + iota
	// EventCycleRestarted: a cycle process runs again after one died.
	EventCycleRestarted
	// EventBringUpFailed: a cycle process could not bring the bus up (the
	// segment absent, not answering, not as configured); the agent tries
	// again without end.
	EventBringUpFailed
	// EventBusAttached: the MQTT publisher took up a cycle process's bus.
	EventBusAttached
	// EventBusDetached: the MQTT publisher let go of the bus (the cycle
	// process stopped or died).
	EventBusDetached
	// EventCommandsRejected: the MQTT writes refused over an interval,
	// summarised once the individual refusals were too many.
	EventCommandsRejected
	// EventSessionTakeover: another MQTT client keeps taking the agent's
	// client id and its session over.
	EventSessionTakeover
	// EventCycleSpike: a cycle woke late or overran, and the agent's
	// forensics (package agent/spikes) explained it: a CycleSpike.
	EventCycleSpike
)

// The texts of an EventBusAlarm: what made the cycles bad. Frames lost
// means nothing was exchanged; a working counter off means the frames came
// back but some slave did not process its part (which slave, a per-slave
// read tells).
const (
	AlarmFramesLost     = "frames lost"
	AlarmWorkingCounter = "working counter off"
)

// Origin says which process reports an event.
type Origin uint8

const (
	// OriginCycle: the cycle process writes it to the event ring.
	OriginCycle Origin = iota
	// OriginAgent: the agent (its supervisor or its MQTT publisher)
	// reports it on its own.
	OriginAgent
)

// Effect is what an event changes in the agent's one model of the bus
// (package busstate). Effects on a slave apply to the configured slave
// at the event's position, and to nothing when none is configured there.
type Effect uint8

const (
	// EffectNone: the model stays as it is.
	EffectNone Effect = iota
	// EffectBusAL: the bus's AL status is the event's (ALState); the slaves
	// that answer take its state.
	EffectBusAL
	// EffectSlaveAL: the slave's AL status and code are the event's; a lost
	// slave that reports a state is reconnecting, and present again once
	// in OP without an error.
	EffectSlaveAL
	// EffectLost: the slave does not answer.
	EffectLost
	// EffectFound: the slave answers again, its state to be read.
	EffectFound
	// EffectBackInOP: the slave is present in OP without an error.
	EffectBackInOP
	// EffectRefused: another device is at the slave's position (Text).
	EffectRefused
	// EffectRecoveryFailed: the slave still answers with an AL error
	// (ALStatusCode).
	EffectRecoveryFailed
	// EffectAlarmRaised: the bus alarm is raised for Text.
	EffectAlarmRaised
	// EffectAlarmCleared: the bus alarm is cleared.
	EffectAlarmCleared
	// EffectLinkDown: the link is down.
	EffectLinkDown
	// EffectLinkUp: the link is up.
	EffectLinkUp
)

// Form says how an Event's Value or Text is shown (in MQTT JSON and in
// the log, under the Field's name).
type Form uint8

const (
	// FormNone: not shown.
	FormNone Form = iota
	// FormText: Text as a string, left out when empty.
	FormText
	// FormNumber: Value as an unsigned number.
	FormNumber
	// FormMicros: Value, a duration in ns, as a number of µs.
	FormMicros
	// FormEmergency: Value packs a CoE emergency (shm.EmergencyValue):
	// error_code, error_register, data (hexadecimal) and the meaning of
	// the error code; the Field's name is not used.
	FormEmergency
	// FormErrorCode: Value is a CiA 301/402 error code (object 0x603F):
	// the code under the Field's name, and its meaning.
	FormErrorCode
	// FormDriveState: Value is a CiA 402 drive state's number: its name
	// (Text, else the standard name of the number) under the Field's name,
	// and the number as state_number.
	FormDriveState
	// FormBlock: Text holds binary data for a device metric: never shown
	// as text.
	FormBlock
)

// Field is how one part of an event (its Value or its Text) is shown.
type Field struct {
	// Name is the JSON field and log key ("cycles", "reason").
	Name string
	// Form says how.
	Form Form
}

// ALForm says which of an event's AL fields (ALState, ALStatusCode) are
// shown.
type ALForm uint8

const (
	// ALNone: neither.
	ALNone ALForm = iota
	// ALCode: the AL status code (al_status_code) and, when not 0, its
	// meaning (al_status).
	ALCode
	// ALStatus: the AL state (state, error) and the code as ALCode shows
	// it.
	ALStatus
)

// Route says where the MQTT publisher takes an event of the cycle
// process.
type Route uint8

const (
	// RouteEvents: a JSON event on …/events.
	RouteEvents Route = iota
	// RouteWriteAnswer: the answer to a write: the publisher matches it to
	// the write it made (Value is the command's Seq) and answers that.
	RouteWriteAnswer
	// RouteNone: not published (a device metric only).
	RouteNone
)

// DeviceMetric names the per-slave series an event sets (the metrics'
// and OTLP's device series).
type DeviceMetric uint8

const (
	// DeviceNone: none.
	DeviceNone DeviceMetric = iota
	// DeviceEmergency: the slave's CoE emergency count and last code.
	DeviceEmergency
	// DeviceDriveState: the drive's state.
	DeviceDriveState
	// DeviceDriveFault: the drive's fault count and error code.
	DeviceDriveFault
	// DeviceDriveFaultCleared: the drive's error code back to 0.
	DeviceDriveFaultCleared
	// DeviceErrorCounters: the slave's ESC error counters, from the block
	// in Text.
	DeviceErrorCounters
)

// EventCounter is a counter family of an event's own: each event adds its
// Value under the label value its Text holds.
type EventCounter struct {
	// Stem names the family without an exporter's prefix or suffix:
	// "frames_discarded" is Prometheus' ecagent_frames_discarded_total.
	Stem string
	// Label is the label the event's Text is the value of.
	Label string
	// Values are the label values exported (at 0) from the start,
	// separated by spaces; see LabelValues.
	Values string
	// Help describes the family.
	Help string
}

// LabelValues returns the label values exported from the start, in a
// fresh slice.
func (c EventCounter) LabelValues() []string { return strings.Fields(c.Values) }

// EventInfo is one row of the event catalogue: everything each output
// needs to render an event of its kind.
type EventInfo struct {
	// Kind is the event's kind.
	Kind EventKind
	// Name is the event's name: its kind in MQTT JSON, in the label kind
	// of the events counter, in the log ("slave-lost").
	Name string
	// Origin is the process that reports it.
	Origin Origin
	// Level is the level of its log line.
	Level slog.Level
	// Log is the message of its log line; empty when the event is not
	// logged on its own (an answer to a write, a metric only) or, for an
	// event of the MQTT publisher, the publisher logs it in its own words.
	Log string
	// PerSlave is set when the event is about the slave at its position
	// (Slave), not about the bus as a whole.
	PerSlave bool
	// Counted is set when the event counts in the events counter (the
	// bus's faults and recoveries, by kind and slave: Prometheus'
	// ecagent_bus_events_total); slave and drive states have series of
	// their own, notes and answers to writes are no faults.
	Counted bool
	// Effect is what the event changes in the bus model.
	Effect Effect
	// AL says which AL fields are shown.
	AL ALForm
	// Value and Text say how the event's Value and Text are shown, in
	// this order, after the slave and the AL fields.
	Value, Text Field
	// Device is the per-slave series the event sets.
	Device DeviceMetric
	// Counter is the event's own counter family; its Stem is empty for
	// none.
	Counter EventCounter
	// Route is where MQTT publishes an event of the cycle process.
	Route Route
}

// Field names used by more than one row.
const (
	textField   = "text"
	reasonField = "reason"
	stateField  = "state"
	cyclesField = "cycles"
)

// catalogue is the table of every event of the product: those of the
// cycle process first, in the order of their kinds (catalogueCycle of
// them), then the agent's. It is never written.
var catalogue = [...]EventInfo{
	{Kind: EventInvalid, Name: "invalid", Route: RouteNone},
	{Kind: EventStateChange, Name: "state-change", Level: slog.LevelWarn, Log: "bus state changed",
		Counted: true, Effect: EffectBusAL, AL: ALStatus, Text: Field{textField, FormText}},
	{Kind: EventALError, Name: "al-error", Level: slog.LevelWarn, Log: "bus state changed",
		Counted: true, Effect: EffectBusAL, AL: ALStatus, Text: Field{textField, FormText}},
	{Kind: EventSlaveLost, Name: "slave-lost", Level: slog.LevelWarn, Log: "slave lost",
		PerSlave: true, Counted: true, Effect: EffectLost, Text: Field{textField, FormText}},
	{Kind: EventSlaveFound, Name: "slave-found", Level: slog.LevelInfo, Log: "slave answers again",
		PerSlave: true, Counted: true, Effect: EffectFound, Text: Field{textField, FormText}},
	{Kind: EventCommandDone, Name: "command-done", PerSlave: true,
		Value: Field{"seq", FormNumber}, Route: RouteWriteAnswer},
	{Kind: EventCommandRejected, Name: "command-rejected", Level: slog.LevelWarn, Log: "command rejected", PerSlave: true,
		Value: Field{"seq", FormNumber}, Text: Field{reasonField, FormText}, Route: RouteWriteAnswer},
	{Kind: EventCycleStarted, Name: "cycle-started", Level: slog.LevelInfo, Log: "cycle started",
		Counted: true, Text: Field{textField, FormText}},
	{Kind: EventNote, Name: "note", Level: slog.LevelInfo, Log: "cycle note", Text: Field{textField, FormText}},
	{Kind: EventEmergency, Name: "emergency", Level: slog.LevelWarn, Log: "CoE emergency",
		PerSlave: true, Counted: true, Value: Field{Form: FormEmergency}, Text: Field{textField, FormText},
		Device: DeviceEmergency},
	{Kind: EventDriveState, Name: "drive-state", Level: slog.LevelInfo, Log: "drive state",
		PerSlave: true, Value: Field{stateField, FormDriveState}, Device: DeviceDriveState},
	{Kind: EventDriveFault, Name: "drive-fault", Level: slog.LevelError, Log: "drive fault",
		PerSlave: true, Counted: true, Value: Field{"error_code", FormErrorCode}, Text: Field{stateField, FormText},
		Device: DeviceDriveFault},
	{Kind: EventDriveFaultCleared, Name: "drive-fault-cleared", Level: slog.LevelInfo, Log: "drive fault cleared",
		PerSlave: true, Counted: true, Text: Field{textField, FormText}, Device: DeviceDriveFaultCleared},
	{Kind: EventBusAlarm, Name: "bus-alarm", Level: slog.LevelWarn, Log: "bus alarm",
		Counted: true, Effect: EffectAlarmRaised, Value: Field{cyclesField, FormNumber}, Text: Field{textField, FormText}},
	{Kind: EventBusAlarmCleared, Name: "bus-alarm-cleared", Level: slog.LevelInfo, Log: "bus alarm cleared",
		Counted: true, Effect: EffectAlarmCleared, Value: Field{cyclesField, FormNumber}, Text: Field{textField, FormText}},
	{Kind: EventSlaveReconnected, Name: "slave-reconnected", Level: slog.LevelInfo, Log: "slave answers again",
		PerSlave: true, Counted: true, Effect: EffectBackInOP, Value: Field{"took_us", FormMicros}, Text: Field{textField, FormText}},
	{Kind: EventSlaveRefused, Name: "slave-refused", Level: slog.LevelError, Log: "another device at a slave's position: not configured",
		PerSlave: true, Counted: true, Effect: EffectRefused, Text: Field{textField, FormText}},
	{Kind: EventALAcknowledged, Name: "al-acknowledged", Level: slog.LevelInfo, Log: "slave AL error acknowledged, back in OP",
		PerSlave: true, Counted: true, Effect: EffectBackInOP, AL: ALCode, Text: Field{textField, FormText}},
	{Kind: EventRecoveryFailed, Name: "recovery-failed", Level: slog.LevelWarn, Log: "slave refuses to return to OP",
		PerSlave: true, Counted: true, Effect: EffectRecoveryFailed, AL: ALCode, Value: Field{"attempts", FormNumber},
		Text: Field{textField, FormText}},
	{Kind: EventLinkDown, Name: "link-down", Level: slog.LevelError, Log: "link down: cyclic frames cannot be sent",
		Counted: true, Effect: EffectLinkDown, Text: Field{textField, FormText}},
	{Kind: EventLinkUp, Name: "link-up", Level: slog.LevelInfo, Log: "link up again",
		Counted: true, Effect: EffectLinkUp, Text: Field{textField, FormText}},
	{Kind: EventSlaveState, Name: "slave-state", Level: slog.LevelInfo, Log: "slave state",
		PerSlave: true, Effect: EffectSlaveAL, AL: ALStatus},
	{Kind: EventFramesDiscarded, Name: "frames-discarded", Level: slog.LevelWarn, Log: "received frames discarded",
		Counted: true, Value: Field{"frames", FormNumber}, Text: Field{reasonField, FormText},
		Counter: EventCounter{Stem: "frames_discarded", Label: reasonField, Values: "invalid foreign mismatched",
			Help: "Received frames the master discarded, by reason: invalid (not an EtherCAT datagram frame), " +
				"foreign (from another source than the segment; none on a raw socket, whose filter refuses them), " +
				"mismatched (from the segment's address, but answering no frame sent, nor late to a lost one: forged, corrupted, a second copy). " +
				"Late answers to lost frames are ecagent_late_answers_total."}},
	{Kind: EventMaintenance, Name: "maintenance", Level: slog.LevelWarn, Log: "maintenance write through the control socket",
		PerSlave: true, Counted: true, Value: Field{"uid", FormNumber}, Text: Field{textField, FormText}},
	{Kind: EventErrorCounters, Name: "error-counters", PerSlave: true, Text: Field{Form: FormBlock},
		Device: DeviceErrorCounters, Route: RouteNone},
	{Kind: EventBusAlarmChanged, Name: "bus-alarm-changed", Level: slog.LevelWarn, Log: "bus alarm changed",
		Counted: true, Effect: EffectAlarmRaised, Value: Field{cyclesField, FormNumber}, Text: Field{textField, FormText}},
	{Kind: EventMaintenanceState, Name: "maintenance-state", Level: slog.LevelWarn,
		Log:      "maintenance takes a slave to another state on purpose (not a fault)",
		PerSlave: true, Counted: true, AL: ALStatus, Value: Field{"uid", FormNumber}, Text: Field{textField, FormText}},

	{Kind: EventCycleDied, Name: "cycle-died", Origin: OriginAgent, Level: slog.LevelError,
		Log: "the cycle process died; restarting it", Counted: true, Route: RouteNone},
	{Kind: EventCycleRestarted, Name: "cycle-restarted", Origin: OriginAgent, Level: slog.LevelInfo,
		Log: "cycle process restarted", Counted: true, Route: RouteNone},
	{Kind: EventBringUpFailed, Name: "bring-up-failed", Origin: OriginAgent, Level: slog.LevelError,
		Log: "the cycle process did not bring the bus up; trying again", Counted: true},
	{Kind: EventBusAttached, Name: "bus-attached", Origin: OriginAgent},
	{Kind: EventBusDetached, Name: "bus-detached", Origin: OriginAgent},
	{Kind: EventCommandsRejected, Name: "commands-rejected", Origin: OriginAgent, Level: slog.LevelWarn},
	{Kind: EventSessionTakeover, Name: "session-takeover", Origin: OriginAgent, Level: slog.LevelError},
	{Kind: EventCycleSpike, Name: "cycle-spike", Origin: OriginAgent, Level: slog.LevelWarn,
		Log: "cycle came late: what delayed it"},
}

// catalogueCycle is the number of the cycle process's kinds: the rows
// catalogue[0:catalogueCycle], row k of kind k.
const catalogueCycle = int(numCycleKinds)

// Events returns every row of the catalogue, those of the cycle process
// first in the order of their kinds, then the agent's, in a fresh slice.
func Events() []EventInfo { return append([]EventInfo(nil), catalogue[:]...) }

// Info returns k's row of the catalogue, and false for a kind that has
// none (a number no kind has).
func (k EventKind) Info() (EventInfo, bool) {
	if int(k) < catalogueCycle {
		return catalogue[k], true
	}
	for i := catalogueCycle; i < len(catalogue); i++ {
		if catalogue[i].Kind == k {
			return catalogue[i], true
		}
	}
	return EventInfo{}, false
}

// String is k's name, or "EventKind(n)" for a number no kind has.
func (k EventKind) String() string {
	if e, ok := k.Info(); ok {
		return e.Name
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// EventNamed returns the row of the event called name, and false when no
// event is.
func EventNamed(name string) (EventInfo, bool) {
	for _, e := range catalogue {
		if e.Name == name {
			return e, true
		}
	}
	return EventInfo{}, false
}

// Package busstate is the agent's one model of the bus and its slaves:
// what each slave is at any moment — whether it answers, its AL state as
// last read with its AL status code, and the quality of its process data —
// and what the bus as a whole is (cycle running, link up, bus alarm).
//
// The agent folds the cycle process's events (package shm) into a Model,
// each as its row of the event catalogue (package contract) says (its
// Effect), and AppendEventFields gives every output an event's fields in
// the same words; every output renders the same Model: the Prometheus gauges (package
// metrics), the JSON and Sparkplug B messages (package mqtt), /readyz, the
// status line and the log. None of them keeps a state of its own, so none
// can show a slave as OP that the others show as lost.
//
// The rules, in one place:
//   - A slave that does not answer is Lost; its AL state is unknown
//     (StateNone), never the OP it was last seen in.
//   - Another device at a slave's position is Refused: not configured, its
//     data invalid.
//   - A slave found again with its configuration kept is Reconnecting until
//     it is back in OP.
//   - Process data is Good while the slave answers in SAFEOP or OP (inputs
//     are exchanged in both, ETG.1000.6 table "state machine"), the cycle
//     runs, the link is up and no bus alarm for lost frames is raised (a
//     working counter off says some slave did not take part, and that
//     slave is found by the per-slave read; the others' data is current). When it stops being
//     Good it is Stale since that moment — the values are the last ones
//     received — or Invalid when it never was Good since the slave was
//     configured or another device answers in its place.
package busstate

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// Presence says whether a slave answers at its place in the segment.
type Presence uint8

// The presences. The zero value is invalid.
const (
	PresenceUnknown Presence = iota
	// PresencePresent: the slave answers at its station address.
	PresencePresent
	// PresenceLost: the slave does not answer.
	PresenceLost
	// PresenceRefused: another device answers at the slave's position; it
	// was not configured.
	PresenceRefused
	// PresenceReconnecting: the slave answers again and is being taken
	// back to OP.
	PresenceReconnecting
)

// Presences lists the valid presences, in order.
var Presences = [...]Presence{PresencePresent, PresenceLost, PresenceRefused, PresenceReconnecting}

// String returns the presence's name as every output writes it.
func (p Presence) String() string {
	switch p {
	case PresencePresent:
		return "present"
	case PresenceLost:
		return "lost"
	case PresenceRefused:
		return "refused"
	case PresenceReconnecting:
		return "reconnecting"
	}
	return "Presence(" + strconv.Itoa(int(p)) + ")"
}

// Quality is the quality of a slave's process data.
type Quality uint8

// The qualities. The zero value is invalid.
const (
	QualityUnknown Quality = iota
	// QualityGood: the values were exchanged in the last cycle.
	QualityGood
	// QualityStale: the values are the last ones received, at Since.
	QualityStale
	// QualityInvalid: there are no values from this slave to show.
	QualityInvalid
)

// Qualities lists the valid qualities, in order.
var Qualities = [...]Quality{QualityGood, QualityStale, QualityInvalid}

// String returns the quality's name as every output writes it.
func (q Quality) String() string {
	switch q {
	case QualityGood:
		return "good"
	case QualityStale:
		return "stale"
	case QualityInvalid:
		return "invalid"
	}
	return "Quality(" + strconv.Itoa(int(q)) + ")"
}

// BringUpReason says why a cycle process could not bring the bus up.
type BringUpReason uint8

// The reasons. The zero value is no failure.
const (
	BringUpOK BringUpReason = iota
	// BringUpLink: the network interface could not be opened.
	BringUpLink
	// BringUpNoAnswer: nothing answered on the segment, no slave was
	// found, or frames went unanswered.
	BringUpNoAnswer
	// BringUpNotAsConfigured: the segment is not as configured (the
	// slave count, a slave refusing a state): a bus half powered, or a
	// configuration that does not fit it.
	BringUpNotAsConfigured
	// BringUpFailed: any other failure (the cycle process's error says
	// which).
	BringUpFailed
)

// BringUpReasons lists the failure reasons, in order.
var BringUpReasons = [...]BringUpReason{BringUpLink, BringUpNoAnswer, BringUpNotAsConfigured, BringUpFailed}

// String returns the reason's name as every output writes it: link,
// no-answer, not-as-configured, failed (ok for none).
func (r BringUpReason) String() string {
	switch r {
	case BringUpOK:
		return "ok"
	case BringUpLink:
		return "link"
	case BringUpNoAnswer:
		return "no-answer"
	case BringUpNotAsConfigured:
		return "not-as-configured"
	case BringUpFailed:
		return "failed"
	}
	return "BringUpReason(" + strconv.Itoa(int(r)) + ")"
}

// ParseBringUpReason returns the reason String names; a name it does not
// know is BringUpFailed.
func ParseBringUpReason(name string) BringUpReason {
	for _, r := range BringUpReasons {
		if r.String() == name {
			return r
		}
	}
	return BringUpFailed
}

// BringUp is where the bus is in being brought up while no cycle process
// exchanges its process data.
type BringUp struct {
	// Starting reports a cycle process started and bringing the bus up.
	Starting bool
	// Failures counts the bring-ups that failed in a row since a cycle
	// process last ran (0: none); Reason and Error say why the last one
	// did, Error in the cycle process's words.
	Failures int
	Reason   BringUpReason
	Error    string
}

// Slave is what the agent knows of one slave.
type Slave struct {
	// Position is the slave's ring position (0 is the first) and Name the
	// name the outputs label it with.
	Position int
	Name     string
	// Presence says whether it answers.
	Presence Presence
	// AL is its AL status as last read while it answered; StateNone when
	// it does not (Lost, Refused).
	AL esc.ALStatus
	// ALStatusCode is its AL status code (0x0134) when AL.Error is set,
	// else 0.
	ALStatusCode esc.ALStatusCode
	// Quality is the quality of its process data, since Since.
	Quality Quality
	Since   time.Time
	// Found names the device that answers in its place when Refused.
	Found string
}

// Up reports whether the slave answers (present or being reconnected).
func (s *Slave) Up() bool {
	return s.Presence == PresencePresent || s.Presence == PresenceReconnecting
}

// Operational reports whether the slave answers in OP without an error.
func (s *Slave) Operational() bool {
	return s.Presence == PresencePresent && s.AL.State == esc.StateOp && !s.AL.Error
}

// Condition describes the slave's state in the words every output uses:
// "OP", "SAFEOP+ERR 0x001b (sync manager watchdog)", "lost",
// "refused: EL1014 …", "reconnecting (PREOP)".
func (s *Slave) Condition() string {
	switch s.Presence {
	case PresenceLost:
		return "lost"
	case PresenceRefused:
		if s.Found != "" {
			return "refused: " + s.Found + " at its position"
		}
		return "refused: another device at its position"
	case PresenceReconnecting:
		return "reconnecting (" + s.AL.String() + ")"
	case PresencePresent:
		if s.AL.Error && s.ALStatusCode != 0 {
			return s.AL.String() + " " + s.ALStatusCode.String()
		}
		return s.AL.String()
	}
	return "unknown"
}

// Label is the slave as the outputs name it in text: "2 (EL1014)".
func (s *Slave) Label() string {
	if s.Name == "" {
		return strconv.Itoa(s.Position)
	}
	return strconv.Itoa(s.Position) + " (" + s.Name + ")"
}

// Bus is the state of the bus as a whole and of every slave.
type Bus struct {
	// CycleRunning reports that a cycle process runs and exchanges the
	// process data.
	CycleRunning bool
	// CycleStalled reports a cycle process that runs no cycles (stopped,
	// hung or starved of CPU): its heartbeat stopped. Nothing is exchanged
	// while it is.
	CycleStalled bool
	// BringUp is, while no cycle process runs, whether one is being
	// started and why the last attempts failed; zero once one runs.
	BringUp BringUp
	// LinkUp reports that the cyclic frames can be sent.
	LinkUp bool
	// Alarm reports a raised bus alarm (frames lost, or the working
	// counter off, in more consecutive cycles than bus.alarm allows), and
	// AlarmText says which.
	Alarm     bool
	AlarmText string
	// State is the bus's AL status as the cycle reads it: the OR of every
	// answering slave's state.
	State esc.ALStatus
	// Slaves are the configured slaves in ring order.
	Slaves []Slave
}

// Answering reports whether slave i answers now: it is up (present or
// being reconnected) and the cycle runs over a link that is up. With the
// link or the cycle process down nothing answers, whatever the last
// per-slave read said.
func (b *Bus) Answering(i int) bool {
	return b.CycleRunning && !b.CycleStalled && b.LinkUp && b.Slaves[i].Up()
}

// ALState is slave i's AL state as it is shown: as last read while it
// answers, StateNone (unknown) while it does not — never the OP it was
// last seen in.
func (b *Bus) ALState(i int) esc.ALState {
	if !b.Answering(i) {
		return esc.StateNone
	}
	return b.Slaves[i].AL.State
}

// Ready reports whether the bus is as it should be — the cycle running,
// the link up, every slave answering in OP without an error, no bus alarm,
// the bus's own AL status OP without the error bit — and, when it is not,
// why, in the words of Condition.
func (b *Bus) Ready() (ok bool, why string) {
	switch {
	case !b.CycleRunning && b.BringUp.Failures > 0:
		f := &b.BringUp
		return false, fmt.Sprintf("cycle process down: bring-up failed %d time(s) in a row (%s): %s", f.Failures, f.Reason, f.Error)
	case !b.CycleRunning && b.BringUp.Starting:
		return false, "cycle process down: a new one is bringing the bus up"
	case !b.CycleRunning:
		return false, "cycle process down"
	case b.CycleStalled:
		return false, "cycle process not responding (its heartbeat stopped)"
	case !b.LinkUp:
		return false, "link down"
	}
	var lost, other []string
	for i := range b.Slaves {
		s := &b.Slaves[i]
		switch {
		case s.Presence == PresenceLost:
			lost = append(lost, s.Label())
		case !s.Operational():
			other = append(other, "slave "+s.Label()+" "+s.Condition())
		}
	}
	var parts []string
	if len(lost) > 0 {
		parts = append(parts, fmt.Sprintf("%d slave(s) not answering: %s", len(lost), strings.Join(lost, ", ")))
	}
	parts = append(parts, other...)
	if len(parts) > 0 {
		return false, strings.Join(parts, "; ")
	}
	if b.Alarm {
		return false, "bus alarm: " + b.AlarmText
	}
	// The bus's AL status is read every cycle, a slave's own status only
	// once the bus's says one changed: until then the bus's is the truth.
	if st := b.State; st.State != esc.StateNone && (st.State != esc.StateOp || st.Error) {
		return false, "bus AL status " + b.stateText() + ": a slave left OP (its own status is being read)"
	}
	return true, ""
}

// stateText is the bus's AL status in words: a state, or MIXED(0x..) when
// the answering slaves are in several, with +ERR for the error bit.
func (b *Bus) stateText() string {
	if !b.State.State.Valid() {
		text := fmt.Sprintf("MIXED(%#02x)", uint8(b.State.State))
		if b.State.Error {
			text += "+ERR"
		}
		return text
	}
	return b.State.String()
}

// Summary is the bus's state in one word or a few, for the status line:
// "OP", "CYCLE-DOWN", "STARTING", "CYCLE-DOWN (bring-up: no-answer)",
// "LINK-DOWN", "OP (1 lost)", "SAFEOP+ERR (1 refused)".
func (b *Bus) Summary() string {
	switch {
	case !b.CycleRunning && b.BringUp.Failures > 0:
		return "CYCLE-DOWN (bring-up: " + b.BringUp.Reason.String() + ")"
	case !b.CycleRunning && b.BringUp.Starting:
		return "STARTING"
	case !b.CycleRunning:
		return "CYCLE-DOWN"
	case b.CycleStalled:
		return "CYCLE-STALLED"
	case !b.LinkUp:
		return "LINK-DOWN"
	}
	state := b.stateText()
	counts := map[Presence]int{}
	for i := range b.Slaves {
		counts[b.Slaves[i].Presence]++
	}
	var notes []string
	for _, p := range []Presence{PresenceLost, PresenceRefused, PresenceReconnecting} {
		if n := counts[p]; n > 0 {
			notes = append(notes, strconv.Itoa(n)+" "+p.String())
		}
	}
	if b.Alarm {
		notes = append(notes, "alarm")
	}
	if len(notes) > 0 {
		state += " (" + strings.Join(notes, ", ") + ")"
	}
	return state
}

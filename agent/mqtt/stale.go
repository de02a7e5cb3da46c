package mqtt

import (
	"time"
)

// Commands that are not live: a command runs once, when it is sent, or
// not at all. A broker keeps a message published with the retain flag and
// delivers it again, retain flag set, to every new subscription (MQTT
// 3.1.1 §3.3.1.3): the agent's at each start and reconnect. Such a
// delivery is a stored command, not one sent now, and it is refused
// whatever it says; so is a command whose own timestamp (Sparkplug's
// payload timestamp, the JSON scheme's optional "ts") is further from the
// agent's clock than MaxCommandAge, such as one a bridge or a client held
// back while a link was down.

// MaxCommandAge bounds how far a command's timestamp may lie from the
// agent's clock, either way: older, it waited somewhere (a bridge's or a
// client's queue) and the state it was meant for has passed; newer, the
// clocks disagree and its age cannot be told. Plant clocks under NTP agree
// within milliseconds, and a command crosses a broker in milliseconds, so
// ten seconds refuses only what is late by far more than any live path
// makes it.
const MaxCommandAge = 10 * time.Second

// retainedReason is the reason of a refused retained delivery.
const retainedReason = "retained command ignored: the broker stored it (it was published with the retain flag) " +
	"and delivers it again at every new subscription (MQTT 3.1.1 §3.3.1.3); publish commands without retain, " +
	"and clear this one (mosquitto_pub -r -n -t <topic>)"

// brokerRetainedReason is the reason of a retained command the embedded
// broker refused on the agent's behalf.
const brokerRetainedReason = "retained command ignored: the embedded broker refuses commands published with the retain flag " +
	"and stores none; publish it without retain"

// message takes a publication from the broker, on the connection's reader
// goroutine (it must not block): a command delivered with the retain flag
// is refused, and so is a second copy of one (duplicate.go); anything
// else goes to the renderer, and the publisher carries out what it asks
// for.
func (p *Publisher) message(topic string, payload []byte, retained, dup bool) {
	if retained && p.refuseRetained(topic, retainedReason) {
		return
	}
	actions := p.r.Command(nil, topic, payload, p.sampler.current.Load())
	re := p.duplicate(topic, payload, actions, dup)
	for _, a := range actions {
		if re != nil && (a.Kind == ActionWrite || a.Kind == ActionNode) {
			p.refusals.reject(time.Now(), re, a.Slave, a.Signal, a.Topic)
			continue
		}
		p.do(&a)
	}
}

// duplicate returns the refusal of a command (its actions) that is a copy
// of one taken already or a redelivery that may have run, or nil; a
// stamped command it lets through is remembered.
func (p *Publisher) duplicate(topic string, payload []byte, actions []Action, dup bool) *RejectError {
	stamped, acts := false, false
	for i := range actions {
		if k := actions[i].Kind; k == ActionWrite || k == ActionNode {
			acts = true
			stamped = stamped || !actions[i].Sent.IsZero()
		}
	}
	switch {
	case !acts:
		return nil
	case !stamped && dup:
		return reject(RejectDuplicate, "%s", dupFlagReason)
	case !stamped:
		return nil
	}
	first, again, full := p.recent.take(keyOf(topic, payload), time.Now())
	switch {
	case again:
		return duplicateReason(first)
	case full:
		return reject(RejectQueueFull, "more than %d time-stamped commands within %v: too many to tell a copy from a new command", maxRemembered, duplicateWindow)
	}
	return nil
}

// command dispatches a live message (not retained, not flagged DUP) on a
// command topic to the renderer. It must not block.
func (p *Publisher) command(topic string, payload []byte) { p.message(topic, payload, false, false) }

// do carries out one action of a command. A write is checked and handed
// to the cycle (writes); a command to the agent itself runs once, when it
// is sent, or not at all: one stamped further than MaxCommandAge from the
// agent's clock is refused.
func (p *Publisher) do(a *Action) {
	now := time.Now()
	switch a.Kind {
	case ActionWrite:
		p.writes.write(a.Slave, a.Signal, a.Topic, a.Sent, a.Value)
	case ActionNode:
		if re := staleCommand(a.Sent, now); re != nil {
			p.refusals.reject(now, re, a.Slave, a.Signal, a.Topic)
			return
		}
		if a.Rebirth {
			p.log.Info("mqtt: rebirth requested")
			p.session.requestRebirth()
		}
	case ActionRefuse:
		p.refusals.reject(now, a.Err, a.Slave, a.Signal, a.Topic)
	case ActionPublish:
		queue(p.out, []Message{a.Message}, now)
	}
}

// RefuseRetained answers a command the embedded broker refused because it
// was published with the retain flag on topic: a command-rejected event
// (code retained), as if it had been delivered. Topics that are not the
// renderer's command topics are ignored. It must not block: the broker
// calls it on the publishing client's goroutine.
func (p *Publisher) RefuseRetained(topic string) { p.refuseRetained(topic, brokerRetainedReason) }

// refuseRetained refuses the retained command on topic with reason, and
// reports whether topic is a command topic at all.
func (p *Publisher) refuseRetained(topic, reason string) bool {
	slave, signal, ok := p.r.CommandOf(topic)
	if !ok {
		return false
	}
	p.refusals.reject(time.Now(), reject(RejectRetained, "%s", reason), slave, signal, topic)
	return true
}

// staleCommand returns the refusal of a command sent at sent (zero: it
// says nothing of when) that lies further than MaxCommandAge from now,
// or nil.
func staleCommand(sent, now time.Time) *RejectError {
	if sent.IsZero() {
		return nil
	}
	switch age := now.Sub(sent); {
	case age > MaxCommandAge:
		return reject(RejectStale, "stale command: sent at %s, %v ago; commands older than %v are refused (check that the sender's clock and the agent's agree)",
			sent.UTC().Format(time.RFC3339Nano), age.Round(time.Millisecond), MaxCommandAge)
	case age < -MaxCommandAge:
		return reject(RejectStale, "command from the future: sent at %s, %v ahead of the agent's clock; the clocks must agree within %v",
			sent.UTC().Format(time.RFC3339Nano), (-age).Round(time.Millisecond), MaxCommandAge)
	}
	return nil
}

package sim

import (
	"github.com/ecagent/ecagent/ethercat/esc"
)

// stateMachine is a device's EtherCAT state machine (ETG.1000.6, ESM), as
// the master sees it through AL control 0x0120, AL status 0x0130 and AL
// status code 0x0134.
//
// A device without an application controller has "device emulation" set in
// its ESC configuration (SII word 0, bit 8): the ESC copies AL control into
// AL status at once and no rule applies. The real EK1100, EL1004, EL2828 and
// EL2889 behave like that in the captures: a master that writes 0x0011
// (INIT with acknowledge) reads back 0x0011, INIT with the error bit set.
//
// A device with an application controller checks each request, refuses
// invalid ones with the error bit and a status code, and takes a few frames
// to get there (the EK1914 took five polls, the EL3004 one).
type stateMachine struct {
	emulated  bool
	bootstrap bool  // the device has a bootstrap mailbox
	delay     int   // frames between a request and its outcome, when framed
	framed    bool  // count frames (WithStateChangeDelay), not time
	time      span  // ns between a request and its outcome (firmware.esm)
	dueAt     int64 // segment time the pending request is decided

	state   esc.ALState
	err     bool
	code    esc.ALStatusCode
	pending bool   // a request waits for its delay
	request uint16 // the AL control value of the pending request
	left    int    // frames before the pending request is decided
	armed   bool   // the request was written during the current frame
	taken   bool   // framed: the controller has read the pending request
	// holdErr, when not ALNoError, is an application error that does not
	// go away: every request for OP is refused with it (a device whose
	// application stays faulty until repaired; Faults.HoldALError).
	holdErr esc.ALStatusCode
}

// status returns the AL status register value.
func (m *stateMachine) status() uint16 {
	v := uint16(m.state)
	if m.err {
		v |= 0x10
	}
	return v
}

// transitionChecker decides whether the device accepts a transition the ESM
// otherwise allows; it returns the refusal code or ALNoError.
type transitionChecker interface {
	checkTransition(from, to esc.ALState) esc.ALStatusCode
}

// control handles a write of v to AL control at segment time now. In
// device emulation mode the status follows at once; otherwise the request
// is decided after took, the controller's time drawn from m.time (by
// advance) or, framed, after the delay in frames (by tick).
func (m *stateMachine) control(v uint16, check transitionChecker, now, took int64) {
	if m.emulated {
		m.state, m.err, m.code = esc.ALState(v&0x0F), v&0x10 != 0, esc.ALNoError
		return
	}
	m.pending, m.request, m.left, m.armed, m.taken = true, v, m.delay, true, false
	m.dueAt = now + took
	if (m.framed && m.delay == 0) || (!m.framed && took == 0) {
		m.decide(check)
	}
}

// unread reports whether AL control holds a request the controller has
// not read yet: on its own time it reads it when it decides it; counting
// frames (WithStateChangeDelay), with the next frame, so that a long delay
// stands for a slow transition rather than a controller that never looks.
func (m *stateMachine) unread() bool { return !m.emulated && m.pending && !m.taken }

// advance decides a pending request whose time is over at segment time
// now, and reports whether the state or error changed.
func (m *stateMachine) advance(check transitionChecker, now int64) bool {
	if m.framed || !m.pending || now < m.dueAt {
		return false
	}
	return m.decide(check)
}

// tick advances a pending request by one frame and decides it when its
// delay is over. It reports whether the state or error changed.
func (m *stateMachine) tick(check transitionChecker) bool {
	if !m.framed || !m.pending {
		return false
	}
	if m.armed {
		m.armed, m.taken = false, true
		return false
	}
	m.left--
	if m.left > 0 {
		return false
	}
	return m.decide(check)
}

// decide applies the pending request following the ESM rules and reports
// whether the status changed.
func (m *stateMachine) decide(check transitionChecker) bool {
	before := m.status()
	beforeCode := m.code
	m.pending, m.armed = false, false
	v := m.request
	to := esc.ALState(v & 0x0F)
	if v&0x10 != 0 { // acknowledge
		m.err, m.code = false, esc.ALNoError
	}
	switch {
	case to == m.state && !m.err:
		// Nothing to do.
	case !to.Valid():
		m.refuse(esc.ALUnknownState)
	case to == esc.StateBootstrap && !m.bootstrap:
		m.refuse(esc.ALBootstrapNotSupported)
	case lower(to, m.state):
		// A transition to a lower state always succeeds.
		m.state, m.err, m.code = to, false, esc.ALNoError
	case m.err:
		// An error indication must be acknowledged before going up.
	case !allowedUp(m.state, to):
		m.refuse(esc.ALInvalidStateChange)
	case to == esc.StateOp && m.holdErr != esc.ALNoError:
		m.refuse(m.holdErr)
	default:
		if code := check.checkTransition(m.state, to); code != esc.ALNoError {
			m.refuse(code)
		} else {
			m.state = to
		}
	}
	return m.status() != before || m.code != beforeCode
}

func (m *stateMachine) refuse(code esc.ALStatusCode) { m.err, m.code = true, code }

// lower reports whether to is a lower state than from in the ESM order
// INIT < PREOP < SAFEOP < OP (BOOT leaves to INIT only).
func lower(to, from esc.ALState) bool {
	if from == esc.StateBootstrap {
		return to == esc.StateInit
	}
	if to == esc.StateBootstrap {
		return false
	}
	return to < from
}

// allowedUp reports whether from→to is a valid upward transition.
func allowedUp(from, to esc.ALState) bool {
	switch from {
	case esc.StateInit:
		return to == esc.StatePreOp || to == esc.StateBootstrap
	case esc.StatePreOp:
		return to == esc.StateSafeOp
	case esc.StateSafeOp:
		return to == esc.StateOp
	}
	return false
}

// raise puts the state machine into an application error: OP drops to
// SAFEOP, lower states stay, the error indication is set with code, and a
// pending request is forgotten.
func (m *stateMachine) raise(code esc.ALStatusCode) {
	if m.state == esc.StateOp {
		m.state = esc.StateSafeOp
	}
	m.err, m.code = true, code
	m.pending, m.armed = false, false
}

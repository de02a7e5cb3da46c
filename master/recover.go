package master

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// Recover takes one slave that left its state, or refused one, back to
// target while the cycle keeps running:
//
//  1. it reads the AL status and AL status code (recorded in the Slave);
//  2. an error indication is acknowledged: AL control with the
//     acknowledge bit at the slave's current state, then polled until the
//     error flag is clear;
//  3. target is requested again, step by step as RequestSlaveState does
//     (mailbox SyncManagers before INIT→PREOP, process-data SyncManagers
//     and FMMUs as mapped before PREOP→SAFEOP), each step awaited within
//     Config.StateTimeout. For SAFEOP→OP the slave needs valid outputs:
//     the running cycle (QueueAcyclic) provides them; without one
//     Recover runs cyclic frames itself while it waits.
//
// A slave that refuses again, or does not get there in time, gives a
// *RecoveryError carrying its AL status code and that code's name; a slave
// that does not answer gives the Bus error (it may be gone: CheckSlaves,
// Reconnect). Recover makes one attempt: the caller backs off and counts.
func (m *Master) Recover(ctx context.Context, s *Slave, target esc.ALState) error {
	if err := m.usable(); err != nil {
		return err
	}
	if err := m.own(s); err != nil {
		return err
	}
	if !target.Valid() || target == esc.StateBootstrap {
		return fmt.Errorf("master: recover %v: cannot recover to %v", s, target)
	}
	st, err := m.readStatus(ctx, s)
	if err != nil {
		return fmt.Errorf("master: recover: %w", err)
	}
	if st.Error {
		code := s.StatusCode()
		m.log.Warn("recover: acknowledging error", "slave", s.String(), "status", st.String(), "code", code.String())
		if err := m.acknowledge(ctx, s, st.State); err != nil {
			return fmt.Errorf("master: recover: %w", err)
		}
		if s.Status().Error {
			ale := &ALStateError{Position: s.Position, Address: s.StationAddress, Name: s.displayName(),
				From: st.State, Requested: st.State, Current: s.State(), Code: code}
			return m.recoveryError(s, target, fmt.Errorf("error indication not acknowledged: %w", ale))
		}
	}
	if err := m.requestState(ctx, []*Slave{s}, target); err != nil {
		var ale *ALStateError
		var ste *StateTimeoutError
		if errors.As(err, &ale) || errors.As(err, &ste) {
			return m.recoveryError(s, target, err)
		}
		return fmt.Errorf("master: recover: %w", err)
	}
	m.log.Info("recover: slave back", "slave", s.String(), "state", target.String())
	return nil
}

// recoveryError builds the *RecoveryError for s from its recorded status
// and the code carried by cause (the slave's last recorded code when
// cause carries none).
func (m *Master) recoveryError(s *Slave, target esc.ALState, cause error) *RecoveryError {
	code := s.StatusCode()
	var ale *ALStateError
	if errors.As(cause, &ale) && ale.Code != esc.ALNoError {
		code = ale.Code
	}
	e := &RecoveryError{Position: s.Position, Address: s.StationAddress, Name: s.displayName(), Target: target,
		Status: s.Status(), Code: code, CodeName: codeName(code), Err: cause}
	m.log.Error("recover: slave refused", "slave", s.String(), "target", target.String(),
		"status", e.Status.String(), "code", code.String())
	return e
}

// codeName is the standard name of an AL status code without its number:
// "invalid output configuration"; "" for no error.
func codeName(c esc.ALStatusCode) string {
	if c == esc.ALNoError {
		return ""
	}
	s := c.String() // "0x001d (name)"
	if i := strings.IndexByte(s, '('); i >= 0 && strings.HasSuffix(s, ")") {
		return s[i+1 : len(s)-1]
	}
	return s
}

// own reports an error when s is not one of the master's slaves.
func (m *Master) own(s *Slave) error {
	if s == nil || s.Position < 0 || s.Position >= len(m.slaves) || m.slaves[s.Position] != s {
		return fmt.Errorf("master: %v is not a slave of this master's last scan", s)
	}
	return nil
}

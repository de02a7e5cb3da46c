package master

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// statePollInterval is the pause between two rounds of AL status polling.
const statePollInterval = time.Millisecond

// alStatusBlock is the span read to learn a slave's state: AL status
// (0x0130), reserved, AL status code (0x0134).
const alStatusBlock = int(esc.RegALStatusCode-esc.RegALStatus) + 2

// nextState returns the state to request next on the way from cur to
// target: up one step at a time (INIT → PREOP → SAFEOP → OP), down
// directly, BOOT only from INIT.
func nextState(cur, target esc.ALState) esc.ALState {
	switch {
	case cur == target:
		return target
	case target == esc.StateBootstrap:
		if cur == esc.StateInit {
			return target
		}
		return esc.StateInit
	case cur == esc.StateBootstrap, !cur.Valid():
		return esc.StateInit
	case rank(target) < rank(cur):
		return target
	}
	switch cur {
	case esc.StateInit:
		return esc.StatePreOp
	case esc.StatePreOp:
		return esc.StateSafeOp
	default:
		return esc.StateOp
	}
}

// rank orders the states INIT < PREOP < SAFEOP < OP.
func rank(s esc.ALState) int {
	switch s {
	case esc.StateInit:
		return 1
	case esc.StatePreOp:
		return 2
	case esc.StateSafeOp:
		return 3
	case esc.StateOp:
		return 4
	}
	return 0
}

// RequestState takes every slave to state, step by step, configuring what
// each step needs on the way: the mailbox SyncManagers before INIT→PREOP,
// the process-data SyncManagers and FMMUs (mapping the process image if
// that has not happened yet) before PREOP→SAFEOP. While slaves go to SAFEOP
// or OP it keeps cyclic frames running so that they see valid outputs.
//
// A slave that refuses a step gives an *ALStateError (acknowledged), one
// that does not answer in Config.StateTimeout a *StateTimeoutError; errors
// of several slaves are joined (use errors.As).
func (m *Master) RequestState(ctx context.Context, state esc.ALState) error {
	if err := m.usable(); err != nil {
		return err
	}
	return m.requestState(ctx, m.slaves, state)
}

// RequestSlaveState takes one slave to state, as RequestState does.
func (m *Master) RequestSlaveState(ctx context.Context, s *Slave, state esc.ALState) error {
	if err := m.usable(); err != nil {
		return err
	}
	return m.requestState(ctx, []*Slave{s}, state)
}

func (m *Master) requestState(ctx context.Context, slaves []*Slave, target esc.ALState) error {
	if !target.Valid() {
		return fmt.Errorf("master: cannot request state %v", target)
	}
	for _, s := range slaves {
		st, err := m.readStatus(ctx, s)
		if err != nil {
			return err
		}
		if !st.Error {
			continue
		}
		code := s.StatusCode()
		m.log.Warn("acknowledging error indication", "slave", s.String(), "status", st.String(), "code", code.String())
		if err := m.acknowledge(ctx, s, st.State); err != nil {
			return err
		}
		if s.Status().Error {
			return &ALStateError{Position: s.Position, Address: s.StationAddress, Name: s.displayName(),
				From: st.State, Requested: target, Current: s.State(), Code: code}
		}
	}
	for {
		var step []transition
		for _, s := range slaves {
			cur := s.State()
			if cur == target {
				continue
			}
			next := nextState(cur, target)
			if err := m.prepare(ctx, s, cur, next); err != nil {
				return err
			}
			if err := m.writeALControl(ctx, s, esc.ALControl{State: next}); err != nil {
				return err
			}
			step = append(step, transition{slave: s, from: cur, to: next})
		}
		if len(step) == 0 {
			return nil
		}
		if err := m.await(ctx, step); err != nil {
			return err
		}
	}
}

// transition is one slave's step in progress.
type transition struct {
	slave    *Slave
	from, to esc.ALState
	done     bool
}

// prepare configures what slave s needs before it goes from cur to next.
func (m *Master) prepare(ctx context.Context, s *Slave, cur, next esc.ALState) error {
	switch {
	case cur == esc.StateInit && next == esc.StatePreOp:
		s.preOpStartup = false
		if err := m.configureMailbox(ctx, s); err != nil {
			return err
		}
		return m.runStartup(ctx, s, transitionCode(cur, next), false, true)
	case cur == esc.StatePreOp && next == esc.StateSafeOp:
		if err := m.runPreOpStartup(ctx, s); err != nil {
			return err
		}
		if m.image == nil {
			if _, err := m.MapProcessImage(); err != nil {
				return err
			}
		}
		return m.configureProcessData(ctx, s)
	}
	return m.runStartup(ctx, s, transitionCode(cur, next), rank(cur) >= rank(esc.StatePreOp), true)
}

// await polls the AL status of the slaves in step until each reached its
// target, refused it, or the state timeout passed.
func (m *Master) await(ctx context.Context, step []transition) error {
	deadline := time.Now().Add(m.cfg.StateTimeout)
	// With a gate the cycle runs in its own goroutine and keeps the
	// outputs valid; the link is not ours to run cyclic frames on.
	keepAlive := m.cyclic != nil && !m.queued()
	for _, t := range step {
		keepAlive = keepAlive && rank(t.to) >= rank(esc.StateSafeOp)
	}
	var errs []error
	for {
		if keepAlive {
			m.cyclic.exchange(time.Now().Add(m.cfg.CycleTimeout))
		}
		pending := 0
		for i := range step {
			t := &step[i]
			if t.done {
				continue
			}
			st, err := m.readStatus(ctx, t.slave)
			if err != nil {
				return err
			}
			switch {
			case st.Error:
				t.done = true
				e := &ALStateError{Position: t.slave.Position, Address: t.slave.StationAddress, Name: t.slave.displayName(),
					From: t.from, Requested: t.to, Current: st.State, Code: t.slave.StatusCode()}
				m.log.Error("slave refused state", "slave", t.slave.String(), "from", t.from.String(),
					"requested", t.to.String(), "current", st.State.String(), "code", e.Code.String())
				if err := m.acknowledge(ctx, t.slave, st.State); err != nil {
					e2 := fmt.Errorf("acknowledge: %w", err)
					errs = append(errs, e, e2)
					continue
				}
				errs = append(errs, e)
			case st.State == t.to:
				t.done = true
			default:
				pending++
			}
		}
		if pending == 0 {
			return errors.Join(errs...)
		}
		if time.Now().After(deadline) {
			for _, t := range step {
				if !t.done {
					errs = append(errs, &StateTimeoutError{Position: t.slave.Position, Address: t.slave.StationAddress,
						Name: t.slave.displayName(), Requested: t.to, Current: t.slave.Status()})
				}
			}
			return errors.Join(errs...)
		}
		if err := sleep(ctx, statePollInterval); err != nil {
			return fmt.Errorf("master: waiting for AL state: %w", err)
		}
	}
}

// ReadStates reads the AL status and status code of every slave, so that
// Slave.State, Status and StatusCode are current: what to do when a cycle's
// AL status read (CycleResult.ALStates) shows that a slave left OP. Like
// every bus operation it must not run while Exchange runs in another
// goroutine.
func (m *Master) ReadStates(ctx context.Context) error {
	if err := m.usable(); err != nil {
		return err
	}
	var errs []error
	for _, s := range m.slaves {
		if _, err := m.readStatus(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// readStatus reads AL status and AL status code of s and records them.
func (m *Master) readStatus(ctx context.Context, s *Slave) (esc.ALStatus, error) {
	var b [alStatusBlock]byte
	if err := m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegALStatus), b[:]); err != nil {
		return esc.ALStatus{}, fmt.Errorf("master: %v: read AL status: %w", s, err)
	}
	st := esc.DecodeALStatus(b[:])
	s.setStatus(st, esc.ALStatusCode(binary.LittleEndian.Uint16(b[alStatusBlock-2:])))
	return st, nil
}

// writeALControl writes AL control of s.
func (m *Master) writeALControl(ctx context.Context, s *Slave, c esc.ALControl) error {
	var b [esc.ALControlLen]byte
	c.Encode(b[:])
	if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegALControl), b[:]); err != nil {
		return fmt.Errorf("master: %v: write AL control %v: %w", s, c.State, err)
	}
	return nil
}

// acknowledge clears the error indication of s, which is in state cur, and
// waits (up to Config.StateTimeout) until the slave has taken it. A slave in
// device emulation copies AL control into AL status, acknowledge bit
// included, so it gets the plain state instead.
func (m *Master) acknowledge(ctx context.Context, s *Slave, cur esc.ALState) error {
	if err := m.writeALControl(ctx, s, esc.ALControl{State: cur, Acknowledge: !s.DeviceEmulation}); err != nil {
		return err
	}
	deadline := time.Now().Add(m.cfg.StateTimeout)
	for {
		st, err := m.readStatus(ctx, s)
		if err != nil || !st.Error || time.Now().After(deadline) {
			return err
		}
		if err := sleep(ctx, statePollInterval); err != nil {
			return fmt.Errorf("master: waiting for %v to acknowledge: %w", s, err)
		}
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

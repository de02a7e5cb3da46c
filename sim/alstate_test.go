package sim

import (
	"testing"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// acceptAll is a transitionChecker that allows every transition.
type acceptAll struct{}

func (acceptAll) checkTransition(from, to esc.ALState) esc.ALStatusCode { return esc.ALNoError }

// TestHeldALError checks that a held application error refuses every
// acknowledged request for OP with its code until it is released, while
// other transitions keep working.
func TestHeldALError(t *testing.T) {
	m := &stateMachine{state: esc.StateOp}
	m.holdErr = 0x001B
	m.raise(0x001B)
	steps := []struct {
		name    string
		control uint16
		release bool
		state   esc.ALState
		err     bool
		code    esc.ALStatusCode
	}{
		{"acknowledge and OP: refused with the held code", 0x18, false, esc.StateSafeOp, true, 0x001B},
		{"again: refused again", 0x18, false, esc.StateSafeOp, true, 0x001B},
		{"acknowledge to SAFEOP: allowed", 0x14, false, esc.StateSafeOp, false, 0},
		{"OP without error: still refused", 0x08, false, esc.StateSafeOp, true, 0x001B},
		{"released: acknowledge and OP succeed", 0x18, true, esc.StateOp, false, 0},
	}
	for _, s := range steps {
		if s.release {
			m.holdErr = esc.ALNoError
		}
		m.control(s.control, acceptAll{}, 0, 0)
		if m.state != s.state || m.err != s.err || m.code != s.code {
			t.Errorf("%s: state %v err %v code %#x, want %v %v %#x", s.name, m.state, m.err, uint16(m.code), s.state, s.err, uint16(s.code))
		}
	}
}

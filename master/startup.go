package master

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// StartupCmd is one command run on a slave at a state transition: a CoE
// SDO download (an ENI's Mailbox/CoE/InitCmd) or a register access (an
// ENI's InitCmd the master does not do its own way).
//
// When they run: register commands of INIT→PREOP before the slave is
// asked for PREOP; every command of PREOP→SAFEOP, and the CoE commands of
// INIT→PREOP (a mailbox needs PREOP), once the slave is in PREOP and
// before its PDO assignment is read, so that an assignment they write is
// the one mapped; the commands of any other transition before the slave
// is asked for its target. Within a transition they run in the order
// given.
type StartupCmd struct {
	// Transition is the ETG.2100 transition code: IP, PS, SO, OP, SP,
	// PI, SI, OI, OS.
	Transition string
	Comment    string
	// SDO: a CoE SDO download of Data to Index:SubIndex, CompleteAccess
	// when Complete; else a register command.
	SDO      bool
	Index    uint16
	SubIndex uint8
	Complete bool
	// Cmd is FPRD, FPWR or FPRW at register Ado of the slave.
	Cmd  wire.Command
	Ado  uint16
	Data []byte
	// WKC is the working counter the register command must come back
	// with; 0 does not check it.
	WKC int
	// Retries is how often a register command whose working counter or
	// validation failed is sent again.
	Retries int
	// Timeout bounds an SDO transfer, and a register command with its
	// retries and validation; 0 uses Config.StateTimeout.
	Timeout time.Duration
	// Validate, when Mask or Data are set, compares the answer of a
	// register command: (answer AND ValidateMask) = ValidateData, read
	// again until Timeout.
	ValidateData []byte
	ValidateMask []byte
}

// StartupError reports a startup command that failed: the slave, the
// transition, the command and why.
type StartupError struct {
	Position   int
	Name       string
	Transition string
	Command    string // "SDO 0x1c12:00" or "FPWR 0x0420"
	Comment    string
	Err        error
}

// Error names the slave, the transition, the command and the cause.
func (e *StartupError) Error() string {
	c := ""
	if e.Comment != "" {
		c = " (" + e.Comment + ")"
	}
	return fmt.Sprintf("master: slave %d (%s): startup command %s%s at %s: %v", e.Position, e.Name, e.Command, c, e.Transition, e.Err)
}

// Unwrap returns the cause.
func (e *StartupError) Unwrap() error { return e.Err }

// transitionCode returns the ETG.2100 code of a transition, "IP" for
// INIT→PREOP.
func transitionCode(from, to esc.ALState) string {
	letter := func(s esc.ALState) string {
		switch s {
		case esc.StateInit:
			return "I"
		case esc.StatePreOp:
			return "P"
		case esc.StateSafeOp:
			return "S"
		case esc.StateOp:
			return "O"
		case esc.StateBootstrap:
			return "B"
		}
		return "?"
	}
	return letter(from) + letter(to)
}

// runStartup runs the slave's startup commands of transition, the SDOs
// when sdo is set and the register commands when reg is.
func (m *Master) runStartup(ctx context.Context, s *Slave, transition string, sdo, reg bool) error {
	e, ok := m.expected(s.Position)
	if !ok {
		return nil
	}
	for _, c := range e.Startup {
		if c.Transition != transition || (c.SDO && !sdo) || (!c.SDO && !reg) {
			continue
		}
		if err := m.runStartupCmd(ctx, s, c); err != nil {
			name := e.Name
			if name == "" {
				name = s.displayName()
			}
			what := fmt.Sprintf("%v %#04x", c.Cmd, c.Ado)
			if c.SDO {
				what = fmt.Sprintf("SDO %#04x:%02x", c.Index, c.SubIndex)
			}
			return &StartupError{Position: s.Position, Name: name, Transition: transition, Command: what, Comment: c.Comment, Err: err}
		}
		m.log.Debug("startup command", "slave", s.String(), "transition", transition, "comment", c.Comment)
	}
	return nil
}

// runStartupCmd runs one startup command.
func (m *Master) runStartupCmd(ctx context.Context, s *Slave, c StartupCmd) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = m.cfg.StateTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if c.SDO {
		if c.Complete {
			return m.SDODownloadComplete(ctx, s, c.Index, c.SubIndex, c.Data)
		}
		return m.SDODownload(ctx, s, c.Index, c.SubIndex, c.Data)
	}
	buf := make([]byte, len(c.Data))
	var last error
	for try := 0; try <= c.Retries; try++ {
		copy(buf, c.Data)
		wkc, err := m.bus.Transact(ctx, c.Cmd, wire.PhysicalAddress(s.StationAddress, c.Ado), buf)
		switch {
		case err != nil:
			last = err
		case c.WKC != 0 && int(wkc) != c.WKC:
			last = fmt.Errorf("working counter %d, want %d", wkc, c.WKC)
		case len(c.ValidateData) == 0:
			return nil
		default:
			if last = m.validate(ctx, s, c, buf); last == nil {
				return nil
			}
		}
		if ctx.Err() != nil {
			break
		}
	}
	return last
}

// validate compares the answer of a register command and reads the
// register again until it matches or the command's time is up.
func (m *Master) validate(ctx context.Context, s *Slave, c StartupCmd, answer []byte) error {
	match := func(b []byte) bool {
		if len(b) < len(c.ValidateData) {
			return false
		}
		got := make([]byte, len(c.ValidateData))
		for i := range got {
			got[i] = b[i]
			if i < len(c.ValidateMask) {
				got[i] &= c.ValidateMask[i]
			}
		}
		return bytes.Equal(got, c.ValidateData)
	}
	for !match(answer) {
		if err := sleep(ctx, statePollInterval); err != nil {
			return fmt.Errorf("read % x, want % x under mask % x", answer, c.ValidateData, c.ValidateMask)
		}
		if err := m.bus.FPRD(ctx, s.StationAddress, c.Ado, answer); err != nil {
			return err
		}
	}
	return nil
}

// runPreOpStartup runs, once per INIT→PREOP, the startup commands that
// need the slave in PREOP: the CoE commands of INIT→PREOP and every
// command of PREOP→SAFEOP. BringUp and Reconnect run them before the PDO
// assignment is read; a slave taken to SAFEOP otherwise runs them on its
// way.
func (m *Master) runPreOpStartup(ctx context.Context, s *Slave) error {
	if s.preOpStartup {
		return nil
	}
	if err := m.runStartup(ctx, s, "IP", true, false); err != nil {
		return err
	}
	if err := m.runStartup(ctx, s, "PS", true, true); err != nil {
		return err
	}
	s.preOpStartup = true
	return nil
}

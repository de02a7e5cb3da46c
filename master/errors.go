package master

import (
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// Sentinel errors. The cyclic ones are returned in CycleResult.Err as they
// are, never wrapped, so the cycle allocates nothing when it reports them.
var (
	// ErrNoResponse is matched by the error of a bring-up frame that went
	// unanswered through every retry.
	ErrNoResponse = errors.New("master: no answer to frame")

	// ErrNoSlaves is returned by Scan when no slave answers.
	ErrNoSlaves = errors.New("master: no slave on the segment")

	// ErrNotScanned is returned by operations that need Scan first.
	ErrNotScanned = errors.New("master: segment not scanned")

	// ErrNotMapped is the CycleResult.Err of Exchange before the process
	// image is mapped (BringUp, MapProcessImage or the way to SAFEOP).
	ErrNotMapped = errors.New("master: process image not mapped")

	// ErrFrameLost is the CycleResult.Err of a cycle in which at least one
	// frame did not come back before the deadline.
	ErrFrameLost = errors.New("master: cyclic frame lost")

	// ErrWKCMismatch is the CycleResult.Err of a cycle whose working
	// counter differs from the expected one.
	ErrWKCMismatch = errors.New("master: cyclic working counter mismatch")

	// ErrBitRange is returned by the ProcessImage accessors for a bit or
	// field outside the slave's inputs or outputs.
	ErrBitRange = errors.New("master: bit outside the slave's process data")

	// ErrClosed is returned after Close.
	ErrClosed = errors.New("master: closed")
)

// WKCError reports a datagram whose working counter is not the expected
// one: a slave did not answer, or did not take the command.
type WKCError struct {
	Command wire.Command
	Address uint32 // as in the datagram: ADP|ADO<<16, or a logical address
	Want    uint16
	Got     uint16
}

// Error names the command, its address and both working counters.
func (e *WKCError) Error() string {
	return fmt.Sprintf("master: %v %s: working counter %d, want %d",
		e.Command, formatAddress(e.Command, e.Address), e.Got, e.Want)
}

// SlaveCountError reports that Scan found another number of slaves than
// Config.ExpectedSlaves.
type SlaveCountError struct {
	Expected int
	Found    int
}

// Error names both counts.
func (e *SlaveCountError) Error() string {
	return fmt.Sprintf("master: found %d slaves on the segment, configuration expects %d", e.Found, e.Expected)
}

// ALStateError reports a slave that refused a state transition: it set the
// error bit of AL status and gave its reason in AL status code 0x0134. The
// master acknowledges the error before returning this.
type ALStateError struct {
	Position  int    // ring position, 0 = first slave
	Address   uint16 // configured station address
	Name      string // device name from the SII
	From      esc.ALState
	Requested esc.ALState
	Current   esc.ALState // the state the slave stayed in or fell back to
	Code      esc.ALStatusCode
}

// Error names the slave, the transition and the AL status code with its standard name.
func (e *ALStateError) Error() string {
	return fmt.Sprintf("master: slave %d (%#04x %s) refused %v→%v, stays in %v: AL status code %v",
		e.Position, e.Address, e.Name, e.From, e.Requested, e.Current, e.Code)
}

// StateTimeoutError reports a slave that neither reached the requested
// state nor refused it within Config.StateTimeout.
type StateTimeoutError struct {
	Position  int
	Address   uint16
	Name      string
	Requested esc.ALState
	Current   esc.ALStatus // the last AL status read
}

// Error names the slave, the requested state and the last AL status.
func (e *StateTimeoutError) Error() string {
	return fmt.Sprintf("master: slave %d (%#04x %s) did not reach %v in time, AL status %v",
		e.Position, e.Address, e.Name, e.Requested, e.Current)
}

// SIIError reports an SII EEPROM access that the ESC refused (command
// error, NACK) through every retry, or that stayed busy too long.
type SIIError struct {
	Address uint16 // configured station address of the slave
	Word    uint16 // EEPROM word address
	Status  esc.SIIControl
	Busy    bool // the interface stayed busy past Config.SIITimeout
}

// Error names the slave, the EEPROM word and the status.
func (e *SIIError) Error() string {
	if e.Busy {
		return fmt.Sprintf("master: slave %#04x: SII EEPROM busy reading word %#04x past the timeout (status %#04x)",
			e.Address, e.Word, uint16(e.Status))
	}
	return fmt.Sprintf("master: slave %#04x: SII EEPROM refused reading word %#04x (status %#04x: command error/NACK)",
		e.Address, e.Word, uint16(e.Status))
}

// formatAddress renders a datagram address the way its command uses it.
func formatAddress(cmd wire.Command, a uint32) string {
	switch cmd.Addressing() {
	case wire.AddressingPosition:
		return fmt.Sprintf("position %d:%#04x", -int(int16(wire.ADP(a))), wire.ADO(a))
	case wire.AddressingConfigured:
		return fmt.Sprintf("%#04x:%#04x", wire.ADP(a), wire.ADO(a))
	case wire.AddressingBroadcast:
		return fmt.Sprintf("all:%#04x", wire.ADO(a))
	}
	return fmt.Sprintf("logical %#08x", a)
}

// ErrSlaveAbsent is matched by the error of Reconnect when no slave
// answers at the position (working counter 0 on its auto-increment
// address): the terminal is still unplugged or unpowered.
var ErrSlaveAbsent = errors.New("master: no slave at that position")

// ErrStillConfigured is matched by the error of Reconnect when the device
// at the position answers at the slave's station address in SAFEOP or
// OP: it kept its power and configuration, so there is nothing to
// reconnect (Recover acknowledges an error and takes it back to OP).
var ErrStillConfigured = errors.New("master: slave kept its configuration")

// RecoveryError reports a slave that Recover could not take back to its
// target state: it refused again (Code is its AL status code, CodeName the
// standard name of that code) or did not get there in time. Err is the
// underlying *ALStateError or *StateTimeoutError (errors.As reaches them).
type RecoveryError struct {
	Position int
	Address  uint16
	Name     string
	Target   esc.ALState
	Status   esc.ALStatus // the last AL status read
	Code     esc.ALStatusCode
	CodeName string // e.g. "invalid output configuration"; "" for code 0
	Err      error
}

// Error names the slave, the target, the state it is in and the code.
func (e *RecoveryError) Error() string {
	return fmt.Sprintf("master: recover slave %d (%#04x %s) to %v: still %v, AL status code %v: %v",
		e.Position, e.Address, e.Name, e.Target, e.Status, e.Code, e.Err)
}

// Unwrap returns the state error underneath.
func (e *RecoveryError) Unwrap() error { return e.Err }

// IdentityMismatchError reports that the device Reconnect found at a
// position is not the one mapped there at bring-up (another vendor,
// product code or revision, or another station alias). Nothing was
// configured on it: the process image of the running cycle does not fit it.
type IdentityMismatchError struct {
	Position  int
	Want, Got Identity
	// WantAlias and GotAlias are the station aliases (0x0012) recorded at
	// bring-up and found now.
	WantAlias, GotAlias uint16
	// Topology, when the configuration lists the slave (Config.Expected),
	// is the field that differs from it.
	Topology *TopologyError
}

// Error names the position and both identities.
func (e *IdentityMismatchError) Error() string {
	if e.Topology != nil {
		return e.Topology.Error() + "; not configured"
	}
	return fmt.Sprintf("master: position %d holds another device than at bring-up: found %v alias %#04x, want %v alias %#04x; not configured",
		e.Position, e.Got, e.GotAlias, e.Want, e.WantAlias)
}

// PDOLayoutError reports that a returning slave's PDO assignment does not
// give the process-data sizes mapped at bring-up: the process image cannot
// change under a running cycle, so Reconnect leaves the slave in PREOP.
type PDOLayoutError struct {
	Position int
	// SM is the SyncManager whose size differs; WantBits and GotBits its
	// sizes at bring-up and now.
	SM                int
	WantBits, GotBits int
}

// Error names the slave, the SyncManager and both sizes.
func (e *PDOLayoutError) Error() string {
	return fmt.Sprintf("master: position %d: PDO assignment of SyncManager %d gives %d bits, %d were mapped; left in PREOP",
		e.Position, e.SM, e.GotBits, e.WantBits)
}

package shm

import (
	"strconv"
	"unsafe"
)

// CommandSize is the size of a Command in the ring.
const CommandSize = 32

// Compile-time check that Command is exactly CommandSize bytes.
var (
	_ [CommandSize - unsafe.Sizeof(Command{})]byte
	_ [unsafe.Sizeof(Command{}) - CommandSize]byte
)

// Command is a request from the agent to the cycle, carried by the
// command ring. The agent validates a command (allow-list, ranges) before
// pushing it; the cycle applies it between two exchanges and answers with
// an Event carrying Seq in Event.Value.
//
// Command holds no pointers and has a fixed layout (pinned by
// TestGoldenLayout), because it lives in shared memory.
type Command struct {
	// Seq is the agent's sequence number for the command, echoed in the
	// answering event.
	Seq uint64
	// Value is the value to write, up to 64 bits: bit i of Value goes to
	// bit BitOffset+i. For CommandRequestState it is the AL state.
	Value uint64
	// BitOffset is the first bit written, counted from the first output
	// bit of the slave at Slave.
	BitOffset uint32
	// Kind says what to do.
	Kind CommandKind
	// Slave is the slave's position on the bus (0 is the first slave).
	Slave uint16
	// BitLen is the number of bits written, 1 to 64.
	BitLen uint16
	_      [6]byte
}

// CommandKind says what a Command asks the cycle to do.
type CommandKind uint16

// Command kinds. The zero value is invalid, so a zeroed slot is never
// mistaken for a command.
const (
	// CommandInvalid is the zero CommandKind.
	CommandInvalid CommandKind = iota
	// CommandSetOutputs writes BitLen bits of Value into the slave's
	// outputs at BitOffset.
	CommandSetOutputs
	// CommandRequestState asks the slave to go to the AL state in Value.
	CommandRequestState
	// CommandAcknowledgeError acknowledges the slave's AL error.
	CommandAcknowledgeError
	// CommandResetDriveFault asks the CiA 402 drive helper of the slave to
	// reset the drive's fault (a rising edge of controlword bit 7).
	CommandResetDriveFault
)

// String names k.
func (k CommandKind) String() string {
	switch k {
	case CommandInvalid:
		return "invalid"
	case CommandSetOutputs:
		return "set-outputs"
	case CommandRequestState:
		return "request-state"
	case CommandAcknowledgeError:
		return "acknowledge-error"
	case CommandResetDriveFault:
		return "reset-drive-fault"
	}
	return "CommandKind(" + strconv.Itoa(int(k)) + ")"
}

// Package maintenance is the local maintenance endpoint of a cycle process and
// the code behind the maintenance commands of ecagent (slaves, reg,
// states, crc, sii, alias, master, sdo, sdos, scan, foe, pdos, data).
//
// The cycle process serves a Unix stream socket (SocketPath of its
// shared-memory segment, in a directory of its own: see socket.go for who
// may serve and use it) in its own goroutines, never the cycle thread.
// Each request runs a Handler method, which calls the ordinary
// *master.Master API: while the cycle runs, the master's transactions go
// through its acyclic queue into the cycle's frames, so the cycle never
// waits for a request. Without an agent the ecagent command opens the
// segment itself and runs the same Handler in-process, so that the output
// is the same either way.
//
// The protocol is one JSON Request per line from the client and one JSON
// Response per line back, in order, on one connection. Requests that
// change a slave (register write, state change, SII write, alias) must
// carry Write: true, and the server records each one it carries out as an
// shm.EventMaintenance event with the uid of the peer (SO_PEERCRED).
package maintenance

import (
	"encoding/json"
	"fmt"

	"github.com/ecagent/ecagent/master"
)

// Op names a request.
type Op string

// The requests a Handler serves.
const (
	// OpHello describes the endpoint (HelloResult).
	OpHello Op = "hello"
	// OpSlaves lists the slaves with their live state (SlavesResult).
	OpSlaves Op = "slaves"
	// OpRegRead reads Len bytes of ESC registers at Addr (RegResult).
	OpRegRead Op = "reg.read"
	// OpRegWrite writes Data to ESC registers at Addr (RegResult); a write.
	OpRegWrite Op = "reg.write"
	// OpStates requests State of one slave or, with Slave AllSlaves, of
	// all (StatesResult); a write.
	OpStates Op = "states"
	// OpCRC reads the port error counters 0x0300–0x0313 (CRCResult).
	OpCRC Op = "crc"
	// OpSIIRead dumps the whole SII EEPROM (SIIResult).
	OpSIIRead Op = "sii.read"
	// OpSIIWrite writes Data as the SII EEPROM and reloads it (SIIResult);
	// a write.
	OpSIIWrite Op = "sii.write"
	// OpAlias writes Alias as the station alias (SII word 4, checksum,
	// reload) (AliasResult); a write.
	OpAlias Op = "alias"
	// OpMaster reports the master's counters (MasterResult).
	OpMaster Op = "master"
)

// AllSlaves as Request.Slave of OpStates means every slave.
const AllSlaves = -1

// Request is one request to the control endpoint.
type Request struct {
	Op Op `json:"op"`
	// Write must be true for the requests that change a slave; the
	// endpoint refuses them otherwise.
	Write bool `json:"write,omitempty"`
	// Slave is the ring position (0 first).
	Slave int `json:"slave"`
	// Addr and Len are the register address and length of OpRegRead,
	// Addr that of OpRegWrite.
	Addr uint16 `json:"addr,omitempty"`
	Len  int    `json:"len,omitempty"`
	// Data is what OpRegWrite and OpSIIWrite write.
	Data []byte `json:"data,omitempty"`
	// State is the AL state OpStates requests: INIT, PREOP, BOOT, SAFEOP or OP.
	State string `json:"state,omitempty"`
	// Force makes OpSIIWrite write an image of another device.
	Force bool `json:"force,omitempty"`
	// Alias is what OpAlias writes.
	Alias uint16 `json:"alias,omitempty"`
	// Name and Password are the file and password of OpFoEWrite and
	// OpFoERead; Progress asks for Response lines with Progress before
	// the result (CallProgress).
	Name     string `json:"name,omitempty"`
	Password uint32 `json:"password,omitempty"`
	Progress bool   `json:"progress,omitempty"`
	// Index and Sub name the object entry of OpSDOUpload and
	// OpSDODownload; Values asks OpSDOInfo for the short values.
	Index  uint16 `json:"index,omitempty"`
	Sub    uint8  `json:"sub,omitempty"`
	Values bool   `json:"values,omitempty"`
}

// IsWrite reports whether the request changes a slave and so needs Write.
func (r Request) IsWrite() bool {
	switch r.Op {
	case OpRegWrite, OpStates, OpSIIWrite, OpAlias, OpFoEWrite, OpSDODownload:
		return true
	}
	return false
}

// Response is the answer to one Request: Error, or Result, the JSON of the
// request's result type.
type Response struct {
	Error string `json:"error,omitempty"`
	// Refused is the slave's refusal of a state, when that is the error,
	// so that the client can tell it (exit code 3) as in-process.
	Refused *master.ALStateError `json:"refused,omitempty"`
	// FoE is the slave's FoE error, when that is the error.
	FoE    *FoEError       `json:"foe,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	// Progress, alone in a line, is how far the request is; the
	// response proper follows.
	Progress *Progress `json:"progress,omitempty"`
}

// RemoteError is an error the endpoint answered with.
type RemoteError struct {
	Msg string
	// Refused is the slave's refusal of a state behind it, if any.
	Refused *master.ALStateError
	// FoE is the slave's FoE error behind it, if any.
	FoE *FoEError
}

// Error returns the endpoint's message.
func (e *RemoteError) Error() string { return e.Msg }

// Unwrap returns the refusal behind the error, if any.
func (e *RemoteError) Unwrap() error {
	if e.Refused == nil {
		return nil
	}
	return e.Refused
}

// ErrWriteNotConfirmed is the refusal of a request that changes a slave
// without Write set.
type ErrWriteNotConfirmed struct{ Op Op }

// Error says what to do.
func (e *ErrWriteNotConfirmed) Error() string {
	return fmt.Sprintf("%s changes the slave: refused without write confirmation (--write)", e.Op)
}

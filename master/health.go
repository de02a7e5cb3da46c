package master

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// SlaveHealth is what CheckSlaves learned of one configured slave.
type SlaveHealth struct {
	// Position is the slave's ring position at bring-up; Address its
	// configured station address, through which it was asked.
	Position int
	Address  uint16
	// Present reports that the slave answered at its station address
	// (working counter 1). A slave that lost power and came back has
	// station address 0 and is not present: Reconnect brings it back.
	Present bool
	// State and Code are its AL status (0x0130) and AL status code
	// (0x0134); zero when not present. State.Error set means the slave
	// refused or left a state: Recover handles it.
	State esc.ALStatus
	Code  esc.ALStatusCode
	// Ports tells which ports have a link with the loop open (DL status
	// 0x0110), as Slave.Ports does; a port open at bring-up and closed
	// now is where the segment broke.
	Ports [esc.PortCount]bool
}

// Healthy reports a present slave without error indication in state.
func (h SlaveHealth) Healthy(state esc.ALState) bool {
	return h.Present && !h.State.Error && h.State.State == state
}

// CheckSlaves asks every configured slave, by station address, for its AL
// status, AL status code (FPRD 0x0130–0x0135) and DL status (FPRD 0x0110),
// records the AL status in the Slave (Slave.State, Status, StatusCode; a
// missing slave keeps its last recorded status) and returns one
// SlaveHealth per slave in ring order, appended to dst[:0] so that a
// caller polling it reuses its slice.
//
// A slave that does not answer (working counter 0) is reported not
// present, which is no error. An error is returned only when the frames
// themselves do not come back (ErrNoResponse: the link or the first slave
// is down), together with the entries gathered so far. While the cycle owns the
// link (QueueAcyclic) its reads go through the cycle.
func (m *Master) CheckSlaves(ctx context.Context, dst []SlaveHealth) ([]SlaveHealth, error) {
	dst = dst[:0]
	if err := m.usable(); err != nil {
		return dst, err
	}
	for _, s := range m.slaves {
		h, err := m.checkSlave(ctx, s)
		if err != nil {
			return dst, err
		}
		dst = append(dst, h)
	}
	return dst, nil
}

// checkSlave reads the AL and DL status of one slave.
func (m *Master) checkSlave(ctx context.Context, s *Slave) (SlaveHealth, error) {
	h := SlaveHealth{Position: s.Position, Address: s.StationAddress}
	var al [alStatusBlock]byte
	present, err := answered(m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegALStatus), al[:]))
	if err != nil {
		return h, fmt.Errorf("master: check %v: read AL status: %w", s, err)
	}
	if !present {
		return h, nil
	}
	var dl [2]byte
	present, err = answered(m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegDLStatus), dl[:]))
	if err != nil {
		return h, fmt.Errorf("master: check %v: read DL status: %w", s, err)
	}
	if !present {
		return h, nil // gone between the two reads
	}
	h.Present = true
	h.State = esc.DecodeALStatus(al[:])
	h.Code = esc.ALStatusCode(binary.LittleEndian.Uint16(al[alStatusBlock-2:]))
	h.Ports = esc.DecodeDLStatus(dl[:]).OpenPorts()
	s.setStatus(h.State, h.Code)
	return h, nil
}

// answered turns the error of a single-slave read into "did it answer":
// a working counter of 0 is no error but absence; anything else is.
func answered(err error) (bool, error) {
	var wkc *WKCError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &wkc) && wkc.Got == 0:
		return false, nil
	}
	return false, err
}

// CountSlaves returns how many slaves answer a broadcast read of register
// 0x0000 (BRD; the working counter): after a link loss, whether the
// segment is whole again. While the cycle owns the link it goes through the cycle.
func (m *Master) CountSlaves(ctx context.Context) (int, error) {
	if m.closed {
		return 0, ErrClosed
	}
	var reg [2]byte
	wkc, err := m.bus.Transact(ctx, wire.BRD, wire.PhysicalAddress(0, uint16(esc.RegType)), reg[:])
	if err != nil {
		return 0, fmt.Errorf("master: count slaves: %w", err)
	}
	return int(wkc), nil
}

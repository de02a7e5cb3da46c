package master

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/coe"
)

// maxInfoBytes bounds the data of one SDO information response, all
// fragments joined: a full OD list of 65536 objects is 128 KiB.
const maxInfoBytes = 2 + 2*65536

// SDOInfoList returns the indexes of all objects in the slave's CoE object
// dictionary (SDO information, get OD list, all objects), in the order the
// slave lists them. A slave without the SDO information service answers
// with an SDO information error: a *coe.AbortError.
func (m *Master) SDOInfoList(ctx context.Context, s *Slave) ([]uint16, error) {
	data, err := m.sdoInfo(ctx, s, coe.InfoListRequest, coe.ListAll, 0)
	if err != nil {
		return nil, fmt.Errorf("master: %v: SDO information OD list: %w", s, err)
	}
	listType, list, err := coe.DecodeODList(data, nil)
	if err != nil {
		return nil, fmt.Errorf("master: %v: SDO information OD list: %w", s, err)
	}
	if listType != coe.ListAll {
		return nil, fmt.Errorf("master: %v: SDO information OD list: %w: list type %d, want %d",
			s, ErrUnexpectedResponse, listType, coe.ListAll)
	}
	return list, nil
}

// SDOInfoObject returns the description of object index: data type,
// object code, highest sub-index and name.
func (m *Master) SDOInfoObject(ctx context.Context, s *Slave, index uint16) (coe.ObjectDescription, error) {
	data, err := m.sdoInfo(ctx, s, coe.InfoObjectRequest, index, 0)
	if err == nil {
		var o coe.ObjectDescription
		if o, err = coe.DecodeObjectDescription(data); err == nil {
			if o.Index == index {
				return o, nil
			}
			err = fmt.Errorf("%w: description of %#04x", ErrUnexpectedResponse, o.Index)
		}
	}
	return coe.ObjectDescription{}, fmt.Errorf("master: %v: SDO information object %#04x: %w", s, index, err)
}

// SDOInfoEntry returns the description of sub-index sub of object index:
// data type, bit length, access rights and name.
func (m *Master) SDOInfoEntry(ctx context.Context, s *Slave, index uint16, sub uint8) (coe.EntryDescription, error) {
	data, err := m.sdoInfo(ctx, s, coe.InfoEntryRequest, index, sub)
	if err == nil {
		var e coe.EntryDescription
		if e, err = coe.DecodeEntryDescription(data); err == nil {
			if e.Index == index && e.SubIndex == sub {
				return e, nil
			}
			err = fmt.Errorf("%w: description of %#04x:%02x", ErrUnexpectedResponse, e.Index, e.SubIndex)
		}
	}
	return coe.EntryDescription{}, fmt.Errorf("master: %v: SDO information entry %#04x:%02x: %w", s, index, sub, err)
}

// sdoInfo sends one SDO information request and returns the response's
// data, its fragments joined. An SDO information error becomes a
// *coe.AbortError for object arg:sub (object 0 for an OD list).
func (m *Master) sdoInfo(ctx context.Context, s *Slave, op coe.InfoOpCode, arg uint16, sub uint8) ([]byte, error) {
	mbx, err := m.openMailbox(s)
	if err != nil {
		return nil, err
	}
	defer mbx.close()
	deadline, err := mbx.request(ctx, func(out []byte, counter uint8) (int, error) {
		return coe.EncodeInfoRequest(out, counter, op, arg, sub)
	})
	if err != nil {
		return nil, err
	}
	want := op + 1 // every request's response has the next op code
	var out []byte
	for {
		msg, err := mbx.await(ctx, deadline, coe.ServiceSDOInfo)
		if err != nil {
			return nil, err
		}
		switch msg.Info.OpCode {
		case coe.InfoErrorRequest:
			code, err := coe.DecodeInfoError(msg.InfoData)
			if err != nil {
				return nil, err
			}
			if op == coe.InfoListRequest {
				arg = 0 // the list type is no object
			}
			return nil, &coe.AbortError{Index: arg, SubIndex: sub, Code: code}
		case want:
			if len(out) == 0 && !infoAnswers(op, arg, sub, msg.InfoData) {
				m.log.Warn("mailbox: ignoring an SDO information answer of another object", "slave", s.String(),
					"opcode", msg.Info.OpCode.String())
				continue
			}
		default:
			if len(out) == 0 {
				// The late answer of an earlier request (a repeat after
				// a frame that seemed lost): not this one's; the wait
				// goes on, as for an emergency.
				m.log.Warn("mailbox: ignoring an SDO information answer of another request", "slave", s.String(),
					"opcode", msg.Info.OpCode.String(), "want", want.String())
				continue
			}
			return nil, fmt.Errorf("%w: %v, want %v", ErrUnexpectedResponse, msg.Info.OpCode, want)
		}
		if len(out)+len(msg.InfoData) > maxInfoBytes {
			return nil, fmt.Errorf("%w: more than %d bytes of SDO information", ErrUnexpectedResponse, maxInfoBytes)
		}
		out = append(out, msg.InfoData...)
		if !msg.Info.Incomplete {
			return out, nil
		}
		// Each fragment gets the full answer time again: a long list
		// takes many mailbox round trips.
		deadline = time.Now().Add(m.cfg.StateTimeout)
	}
}

// infoAnswers reports whether data, the first fragment of an SDO information
// response, describes what the request op asked of object arg (and sub):
// an answer to an earlier request of the same kind, come late, does not.
func infoAnswers(op coe.InfoOpCode, arg uint16, sub uint8, data []byte) bool {
	switch op {
	case coe.InfoObjectRequest:
		return len(data) < 2 || binary.LittleEndian.Uint16(data) == arg
	case coe.InfoEntryRequest:
		return len(data) < 3 || (binary.LittleEndian.Uint16(data) == arg && data[2] == sub)
	}
	return true
}

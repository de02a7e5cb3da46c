package sim

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/wire"
)

// Preset puts a fresh segment where a master that configured it earlier
// would have left it: station addresses first, first+1, … in ring order,
// and every device asked for state (INIT or PREOP). It sends the frames a
// master would (APWR 0x0010, BWR 0x0120) through Process, so the devices
// take the same paths as on the wire. Replaying a capture that starts in
// the middle of a session (TwinCAT's) needs this; ordinary use does not.
func (s *Segment) Preset(first uint16, state esc.ALState) error {
	if state != esc.StateInit && state != esc.StatePreOp {
		return fmt.Errorf("sim: preset state %v: want INIT or PREOP", state)
	}
	if first == 0 {
		return errors.New("sim: preset station address 0: want the first slave's address, e.g. 0x1001")
	}
	buf := make([]byte, wire.MaxFrameLen)
	var b wire.Builder
	send := func() error {
		if !s.Process(b.Bytes()) {
			return errors.New("sim: preset frame not processed")
		}
		return nil
	}
	broadcast := [6]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}
	for i := range s.devices {
		_ = b.Reset(buf, broadcast, [6]byte{})
		if err := b.AppendData(wire.APWR, 0, wire.PhysicalAddress(wire.PositionADP(i), uint16(esc.RegStationAddress)),
			binary.LittleEndian.AppendUint16(nil, first+uint16(i))); err != nil {
			return err
		}
		if err := send(); err != nil {
			return err
		}
		if mb := s.devices[i].sii.Header.StandardMailbox; state == esc.StatePreOp && s.devices[i].sii.Header.HasMailbox() {
			// PREOP needs the mailbox SyncManagers as the SII gives them.
			sms := make([]byte, 2*esc.SyncManagerLen)
			esc.SyncManager{PhysicalStart: mb.ReceiveOffset, Length: mb.ReceiveSize,
				Control: esc.SMModeMailbox | esc.SMDirWrite, Activate: esc.SMActivateOn}.Encode(sms)
			esc.SyncManager{PhysicalStart: mb.SendOffset, Length: mb.SendSize,
				Control: esc.SMModeMailbox | esc.SMDirRead, Activate: esc.SMActivateOn}.Encode(sms[esc.SyncManagerLen:])
			_ = b.Reset(buf, broadcast, [6]byte{})
			if err := b.AppendData(wire.FPWR, 0, wire.PhysicalAddress(first+uint16(i), uint16(esc.RegSyncManager0)), sms); err != nil {
				return err
			}
			if err := send(); err != nil {
				return err
			}
		}
	}
	_ = b.Reset(buf, broadcast, [6]byte{})
	ctl := make([]byte, esc.ALControlLen)
	esc.ALControl{State: state}.Encode(ctl)
	if err := b.AppendData(wire.BWR, 0, wire.PhysicalAddress(0, uint16(esc.RegALControl)), ctl); err != nil {
		return err
	}
	if err := send(); err != nil {
		return err
	}
	// The master that configured the segment waited for the devices'
	// controllers to carry the request out: so does the preset, whatever
	// the time on the segment's clock.
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range s.devices {
		if d.esm.pending && d.esm.decide(d) {
			d.stateChanged()
		}
	}
	return nil
}

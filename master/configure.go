package master

import (
	"context"
	"fmt"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// Mailbox SyncManager control bytes: 1-buffer (mailbox) mode, ECAT writes
// SM0 (receive mailbox) and reads SM1 (send mailbox), PDI interrupt on.
const (
	mailboxReceiveControl = esc.SMModeMailbox | esc.SMDirWrite | esc.SMIRQPDI // 0x26
	mailboxSendControl    = esc.SMModeMailbox | esc.SMDirRead | esc.SMIRQPDI  // 0x22
)

// configureMailbox writes SM0 and SM1 from the SII header's standard
// mailbox, for slaves that have one.
func (m *Master) configureMailbox(ctx context.Context, s *Slave) error {
	if !s.HasMailbox {
		return nil
	}
	var b [2 * esc.SyncManagerLen]byte
	esc.SyncManager{PhysicalStart: s.Mailbox.ReceiveOffset, Length: s.Mailbox.ReceiveSize,
		Control: mailboxReceiveControl, Activate: esc.SMActivateOn}.Encode(b[:])
	esc.SyncManager{PhysicalStart: s.Mailbox.SendOffset, Length: s.Mailbox.SendSize,
		Control: mailboxSendControl, Activate: esc.SMActivateOn}.Encode(b[esc.SyncManagerLen:])
	if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegSyncManager(0)), b[:]); err != nil {
		return fmt.Errorf("master: %v: configure mailbox SyncManagers: %w", s, err)
	}
	m.log.Debug("mailbox configured", "slave", s.String(),
		"receive", fmt.Sprintf("%#04x+%d", s.Mailbox.ReceiveOffset, s.Mailbox.ReceiveSize),
		"send", fmt.Sprintf("%#04x+%d", s.Mailbox.SendOffset, s.Mailbox.SendSize))
	return nil
}

// configureProcessData writes the process-data SyncManagers (length from
// the PDO bits, a SyncManager without PDOs disabled) and the FMMUs the
// mapping chose for s.
func (m *Master) configureProcessData(ctx context.Context, s *Slave) error {
	for _, sm := range s.SyncManagers {
		var b [esc.SyncManagerLen]byte
		reg := esc.SyncManager{PhysicalStart: sm.Start, Length: uint16(sm.Bytes()), Control: sm.Control}
		if sm.Bytes() > 0 {
			reg.Activate = esc.SMActivateOn
		}
		reg.Encode(b[:])
		if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegSyncManager(sm.Index)), b[:]); err != nil {
			return fmt.Errorf("master: %v: configure SyncManager %d: %w", s, sm.Index, err)
		}
	}
	for _, f := range s.fmmus {
		var b [esc.FMMULen]byte
		f.fmmu.Encode(b[:])
		if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegFMMU(f.index)), b[:]); err != nil {
			return fmt.Errorf("master: %v: configure FMMU %d: %w", s, f.index, err)
		}
	}
	if len(s.SyncManagers) > 0 {
		m.log.Debug("process data configured", "slave", s.String(), "outputs", s.Outputs, "inputs", s.Inputs, "fmmus", len(s.fmmus))
	}
	return nil
}

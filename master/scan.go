package master

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// Register areas Scan clears on every slave: all 16 FMMUs and all 16
// SyncManagers an ESC can have.
const (
	fmmuArea        = 16 * esc.FMMULen
	syncManagerArea = 16 * esc.SyncManagerLen
)

// escConfigDeviceEmulation is bit 0 of the ESC configuration register
// 0x0141: AL status follows AL control without an application controller.
const escConfigDeviceEmulation = 0x01

// siiAccessPDI in register 0x0500 assigns the SII EEPROM to the PDI.
const siiAccessPDI = 0x01

// Scan finds the slaves of the segment and reads what the master needs to
// know about them, leaving them all in INIT:
//
//  1. BRD 0x0000: the working counter is the number of slaves, checked
//     against Config.ExpectedSlaves;
//  2. every slave to INIT with errors acknowledged (BWR AL control), FMMUs
//     and SyncManagers cleared, the SII EEPROM assigned to ECAT;
//  3. station addresses 0x1001, 0x1002, … by ring position (APWR 0x0010);
//  4. per slave: ESC information (0x0000, DC support), DL status (0x0110,
//     open ports and so the topology), alias, ESC configuration (0x0141,
//     device emulation), AL status, and the SII EEPROM
//     through 0x0500–0x050F, parsed (a bad header checksum only warns),
//     after which the EEPROM is handed to the slave's PDI (0x0500 = 1).
//
// Scan replaces the slaves and forgets any earlier process image.
func (m *Master) Scan(ctx context.Context) ([]*Slave, error) {
	if m.closed {
		return nil, ErrClosed
	}
	m.slaves, m.image, m.cyclic = nil, nil, nil
	wkc, err := m.countSlaves(ctx)
	if err != nil {
		return nil, fmt.Errorf("master: scan: count slaves: %w", err)
	}
	n := int(wkc)
	switch {
	case n == 0:
		return nil, ErrNoSlaves
	case m.cfg.ExpectedSlaves > 0 && n != m.cfg.ExpectedSlaves && len(m.cfg.Expected) == 0:
		return nil, &SlaveCountError{Expected: m.cfg.ExpectedSlaves, Found: n}
	}
	m.log.Info("scan: slaves counted", "count", n)

	if err := m.resetAll(ctx, n); err != nil {
		return nil, fmt.Errorf("master: scan: %w", err)
	}
	slaves := make([]*Slave, n)
	var reg [2]byte
	for pos := range slaves {
		s := &Slave{Position: pos, StationAddress: uint16(firstStationAddress + pos)}
		binary.LittleEndian.PutUint16(reg[:], s.StationAddress)
		if err := m.bus.APWR(ctx, pos, uint16(esc.RegStationAddress), reg[:]); err != nil {
			return nil, fmt.Errorf("master: scan: set station address of position %d: %w", pos, err)
		}
		slaves[pos] = s
	}
	for _, s := range slaves {
		if err := m.identify(ctx, s); err != nil {
			return nil, fmt.Errorf("master: scan: %w", err)
		}
		m.log.Info("scan: slave", "position", s.Position, "address", fmt.Sprintf("%#04x", s.StationAddress),
			"name", s.Name, "vendor", fmt.Sprintf("%#08x", s.Identity.VendorID),
			"product", fmt.Sprintf("%#08x", s.Identity.ProductCode), "revision", fmt.Sprintf("%#08x", s.Identity.Revision),
			"inputs", s.InputBits, "outputs", s.OutputBits, "mailbox", s.HasMailbox, "dc", s.DC, "state", s.State().String())
	}
	assignParents(slaves)
	if len(m.cfg.Expected) > 0 {
		if err := m.checkTopology(slaves); err != nil {
			return nil, fmt.Errorf("master: scan: the segment is not as configured: %w", err)
		}
	}
	m.slaves = slaves
	return slaves, nil
}

// resetAll takes the n slaves to INIT and clears their FMMUs and
// countSlaves counts the slaves with a broadcast read. A segment that does
// not answer at all is given Config.StateTimeout to appear: devices take
// about a second after power-on before they forward frames, and a
// simulated segment started beside the master may not serve yet. Any
// answer, also one with working counter 0, ends the wait.
func (m *Master) countSlaves(ctx context.Context) (uint16, error) {
	var reg [2]byte
	until := time.Now().Add(m.cfg.StateTimeout)
	for {
		wkc, err := m.bus.BRD(ctx, uint16(esc.RegType), reg[:], AnyWKC)
		if err == nil || !errors.Is(err, ErrNoResponse) || time.Now().After(until) || ctx.Err() != nil {
			return wkc, err
		}
		m.log.Debug("scan: no answer yet, the segment may still be starting", "err", err)
	}
}

// SyncManagers; the SII EEPROM goes to ECAT.
func (m *Master) resetAll(ctx context.Context, n int) error {
	var reg [esc.ALControlLen]byte
	esc.ALControl{State: esc.StateInit, Acknowledge: true}.Encode(reg[:])
	if err := m.bus.BWR(ctx, uint16(esc.RegALControl), reg[:], n); err != nil {
		return fmt.Errorf("request INIT: %w", err)
	}
	// BRD ORs the slaves' AL status: the state nibble is INIT only when
	// every slave is in INIT.
	deadline := time.Now().Add(m.cfg.StateTimeout)
	for {
		if _, err := m.bus.BRD(ctx, uint16(esc.RegALStatus), reg[:], n); err != nil {
			return fmt.Errorf("read AL status: %w", err)
		}
		if esc.DecodeALStatus(reg[:]).State == esc.StateInit {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slaves did not all reach INIT within %v (ORed AL status %#04x)",
				m.cfg.StateTimeout, binary.LittleEndian.Uint16(reg[:]))
		}
		if err := sleep(ctx, statePollInterval); err != nil {
			return err
		}
	}
	zero := make([]byte, max(fmmuArea, syncManagerArea))
	if err := m.bus.BWR(ctx, uint16(esc.RegFMMU0), zero[:fmmuArea], n); err != nil {
		return fmt.Errorf("clear FMMUs: %w", err)
	}
	if err := m.bus.BWR(ctx, uint16(esc.RegSyncManager0), zero[:syncManagerArea], n); err != nil {
		return fmt.Errorf("clear SyncManagers: %w", err)
	}
	if err := m.bus.BWR(ctx, uint16(esc.RegSIIConfig), zero[:1], n); err != nil {
		return fmt.Errorf("assign SII EEPROM to ECAT: %w", err)
	}
	return nil
}

// identify reads the ESC registers and the SII of s.
func (m *Master) identify(ctx context.Context, s *Slave) error {
	var info [esc.InfoLen]byte
	if err := m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegType), info[:]); err != nil {
		return fmt.Errorf("%v: read ESC information: %w", s, err)
	}
	s.ESC = esc.DecodeInfo(info[:])
	s.DC = s.ESC.HasDC()

	var reg [2]byte
	if err := m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegDLStatus), reg[:]); err != nil {
		return fmt.Errorf("%v: read DL status: %w", s, err)
	}
	s.Ports = esc.DecodeDLStatus(reg[:]).OpenPorts()
	if err := m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegStationAlias), reg[:]); err != nil {
		return fmt.Errorf("%v: read station alias: %w", s, err)
	}
	s.Alias = binary.LittleEndian.Uint16(reg[:])
	if err := m.bus.FPRD(ctx, s.StationAddress, uint16(esc.RegPDIControl), reg[:]); err != nil {
		return fmt.Errorf("%v: read PDI control and ESC configuration: %w", s, err)
	}
	s.DeviceEmulation = reg[1]&escConfigDeviceEmulation != 0
	st, err := m.readStatus(ctx, s)
	if err != nil {
		return err
	}
	if s.DeviceEmulation && st.Error && st.State == esc.StateInit {
		// The acknowledge bit of the reset, mirrored: request plain INIT.
		if err := m.writeALControl(ctx, s, esc.ALControl{State: esc.StateInit}); err != nil {
			return err
		}
		if _, err := m.readStatus(ctx, s); err != nil {
			return err
		}
	}

	dev, err := m.readSII(ctx, s)
	if err != nil {
		return err
	}
	describe(s, dev)
	// Hand the EEPROM back to the slave's PDI: a slave controller may need
	// it on its way to PREOP.
	if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegSIIConfig), []byte{siiAccessPDI}); err != nil {
		return fmt.Errorf("%v: assign SII EEPROM to PDI: %w", s, err)
	}
	return nil
}

// describe fills the slave's identity, mailbox and process-data layout
// from its SII.
func describe(s *Slave, dev *sii.Device) {
	s.SII = dev
	id := dev.Header.Identity
	s.Identity = Identity{VendorID: id.VendorID, ProductCode: id.ProductCode, Revision: id.RevisionNumber, SerialNumber: id.SerialNumber}
	s.Name = dev.Name()
	s.OrderCode = dev.OrderCode()
	s.Mailbox = dev.Header.StandardMailbox
	s.HasMailbox = dev.Header.HasMailbox()
	s.Protocols = dev.Header.MailboxProtocols
	s.SyncManagers, s.InputBits, s.OutputBits = nil, 0, 0
	for i, sm := range dev.SyncManagers {
		if !sm.Type.IsProcessData() {
			continue
		}
		pd := ProcessDataSM{Index: i, Type: sm.Type, Start: sm.StartAddress, Control: sm.Control, Bits: dev.SyncManagerBits(i)}
		s.SyncManagers = append(s.SyncManagers, pd)
		if sm.Type == sii.SMProcessDataOut {
			s.OutputBits += pd.Bits
		} else {
			s.InputBits += pd.Bits
		}
	}
}

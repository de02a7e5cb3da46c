package master

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/master/esc"
	"github.com/ecagent/ecagent/master/sii"
)

// Whole-EEPROM access for maintenance tools (ecagent sii, alias): a dump
// of every byte the EEPROM holds, word writes through the ESC's EEPROM
// interface (0x0502 write command, ESC datasheet section II "SII EEPROM
// interface") and the reload of the ESC configuration area. Like every
// Bus transaction they go through the cycle's acyclic queue while it runs.

// EEPROMBytes is how many bytes ReadEEPROM reads of an EEPROM whose header
// is header: the size the header declares (word 0x3E, KiBit minus one),
// at least minSIISize when it is blank.
func EEPROMBytes(header []byte) int {
	if len(header) < sii.HeaderSize {
		return minSIISize
	}
	n := (int(binary.LittleEndian.Uint16(header[0x7C:])) + 1) * 1024 / 8
	if n <= sii.HeaderSize || binary.LittleEndian.Uint16(header[0x7C:]) == 0xFFFF {
		return minSIISize
	}
	return n
}

// ReadEEPROM returns the whole SII EEPROM of s, byte for byte: as many
// bytes as its header declares (EEPROMBytes), not only the categories in
// use as the scan reads them.
func (m *Master) ReadEEPROM(ctx context.Context, s *Slave) ([]byte, error) {
	r, err := newEEPROMReader(ctx, m.bus, s.StationAddress, m.cfg.SIITimeout, m.cfg.Retries)
	if err != nil {
		return nil, fmt.Errorf("master: %v: EEPROM interface: %w", s, err)
	}
	header := make([]byte, sii.HeaderSize)
	if err := r.ReadWords(0, header); err != nil {
		return nil, fmt.Errorf("master: %v: read SII header: %w", s, err)
	}
	img := make([]byte, EEPROMBytes(header))
	copy(img, header)
	if err := r.ReadWords(uint16(len(header)/2), img[len(header):]); err != nil {
		return nil, fmt.Errorf("master: %v: read SII: %w", s, err)
	}
	return img, nil
}

// ReadEEPROMAt fills dst (a whole number of words) with the SII EEPROM
// of s from word address word on.
func (m *Master) ReadEEPROMAt(ctx context.Context, s *Slave, word uint16, dst []byte) error {
	r, err := newEEPROMReader(ctx, m.bus, s.StationAddress, m.cfg.SIITimeout, m.cfg.Retries)
	if err != nil {
		return fmt.Errorf("master: %v: EEPROM interface: %w", s, err)
	}
	if err := r.ReadWords(word, dst); err != nil {
		return fmt.Errorf("master: %v: read SII at word %#04x: %w", s, word, err)
	}
	return nil
}

// WriteEEPROM writes data (a whole number of words) into the SII EEPROM
// of s from word address word on, one word per write command, waiting for
// each to complete. A word the EEPROM refuses because it is still busy
// with its own write cycle (a missing acknowledge) is sent again until
// the SII timeout.
func (m *Master) WriteEEPROM(ctx context.Context, s *Slave, word uint16, data []byte) error {
	if len(data)%2 != 0 {
		return fmt.Errorf("master: %v: EEPROM write of %d bytes, not a whole number of words", s, len(data))
	}
	r, err := newEEPROMReader(ctx, m.bus, s.StationAddress, m.cfg.SIITimeout, m.cfg.Retries)
	if err != nil {
		return fmt.Errorf("master: %v: EEPROM interface: %w", s, err)
	}
	for i := 0; i < len(data); i += 2 {
		if err := m.writeEEPROMWord(ctx, r, s, word+uint16(i/2), data[i:i+2]); err != nil {
			return err
		}
	}
	return nil
}

// writeEEPROMWord runs one write command: control with write enable,
// address and data in one datagram (0x0502–0x0509), then waits until the
// interface is idle again.
func (m *Master) writeEEPROMWord(ctx context.Context, r *eepromReader, s *Slave, word uint16, v []byte) error {
	deadline := time.Now().Add(m.cfg.SIITimeout)
	for {
		var cmd [8]byte
		esc.SIIControl(esc.SIICmdWrite | esc.SIIWriteEnable).Encode(cmd[:])
		binary.LittleEndian.PutUint32(cmd[2:], uint32(word))
		copy(cmd[6:], v)
		// 0x0508 follows the 4-byte address register: the data word
		// sits at cmd[6:8] of a datagram starting at 0x0502.
		if err := r.writeReg(uint16(esc.RegSIIControl), cmd[:]); err != nil {
			return fmt.Errorf("master: %v: SII write command at word %#04x: %w", s, word, err)
		}
		st, _, err := r.waitIdle(word)
		if err != nil {
			return fmt.Errorf("master: %v: SII write at word %#04x: %w", s, word, err)
		}
		if !st.Failed() {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("master: %v: SII write at word %#04x: %w", s, word,
				&SIIError{Address: s.StationAddress, Word: word, Status: st})
		}
		m.bus.counters.retries.Add(1)
	}
}

// ReloadEEPROM makes the ESC of s load its configuration area (SII words
// 0–7: PDI, ESC configuration, station alias) again, as at power-up.
func (m *Master) ReloadEEPROM(ctx context.Context, s *Slave) error {
	r, err := newEEPROMReader(ctx, m.bus, s.StationAddress, m.cfg.SIITimeout, m.cfg.Retries)
	if err != nil {
		return fmt.Errorf("master: %v: EEPROM interface: %w", s, err)
	}
	var cmd [2]byte
	esc.SIIControl(esc.SIICmdReload).Encode(cmd[:])
	if err := r.writeReg(uint16(esc.RegSIIControl), cmd[:]); err != nil {
		return fmt.Errorf("master: %v: SII reload command: %w", s, err)
	}
	st, _, err := r.waitIdle(0)
	if err != nil {
		return fmt.Errorf("master: %v: SII reload: %w", s, err)
	}
	if st.Failed() {
		return fmt.Errorf("master: %v: SII reload: %w", s, &SIIError{Address: s.StationAddress, Status: st})
	}
	return nil
}

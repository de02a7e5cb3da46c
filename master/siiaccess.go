package master

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
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
	var img []byte
	err := m.withEEPROM(ctx, s, func(r *eepromReader) error {
		header := make([]byte, sii.HeaderSize)
		if err := r.ReadWords(0, header); err != nil {
			return fmt.Errorf("master: %v: read SII header: %w", s, err)
		}
		img = make([]byte, EEPROMBytes(header))
		copy(img, header)
		if err := r.ReadWords(uint16(len(header)/2), img[len(header):]); err != nil {
			return fmt.Errorf("master: %v: read SII: %w", s, err)
		}
		return nil
	})
	return img, err
}

// withEEPROM assigns the EEPROM of s to EtherCAT (0x0500 = 0), runs f with
// a reader of its interface, and hands the EEPROM back to the slave's PDI
// as Scan leaves it.
func (m *Master) withEEPROM(ctx context.Context, s *Slave, f func(r *eepromReader) error) error {
	if err := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegSIIConfig), []byte{0}); err != nil {
		return fmt.Errorf("master: %v: assign SII EEPROM to EtherCAT: %w", s, err)
	}
	r, err := newEEPROMReader(ctx, m.bus, s.StationAddress, m.cfg.SIITimeout, m.cfg.Retries)
	if err == nil {
		err = f(r)
	} else {
		err = fmt.Errorf("master: %v: EEPROM interface: %w", s, err)
	}
	if perr := m.bus.FPWR(ctx, s.StationAddress, uint16(esc.RegSIIConfig), []byte{siiAccessPDI}); perr != nil && err == nil {
		err = fmt.Errorf("master: %v: assign SII EEPROM to PDI: %w", s, perr)
	}
	return err
}

// ReadEEPROMAt fills dst (a whole number of words) with the SII EEPROM
// of s from word address word on.
func (m *Master) ReadEEPROMAt(ctx context.Context, s *Slave, word uint16, dst []byte) error {
	return m.withEEPROM(ctx, s, func(r *eepromReader) error {
		if err := r.ReadWords(word, dst); err != nil {
			return fmt.Errorf("master: %v: read SII at word %#04x: %w", s, word, err)
		}
		return nil
	})
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
	return m.withEEPROM(ctx, s, func(r *eepromReader) error {
		for i := 0; i < len(data); i += 2 {
			if err := m.writeEEPROMWord(ctx, r, s, word+uint16(i/2), data[i:i+2]); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeEEPROMWord runs one write command: control with write enable,
// address and data in one datagram (0x0502–0x0509).
func (m *Master) writeEEPROMWord(ctx context.Context, r *eepromReader, s *Slave, word uint16, v []byte) error {
	return m.eepromCommand(ctx, r, s, esc.SIICmdWrite|esc.SIIWriteEnable, word, v)
}

// eepromCommand writes command ctl with word address word and data (the
// data register follows the 4-byte address register: bytes 6–7 of a
// datagram at 0x0502) and waits until the interface is idle again. A
// command the EEPROM refuses (no acknowledge while it finishes its own
// write cycle, ~4 ms after a word write) is sent again until the SII
// timeout.
func (m *Master) eepromCommand(ctx context.Context, r *eepromReader, s *Slave, ctl esc.SIIControl, word uint16, data []byte) error {
	deadline := time.Now().Add(m.cfg.SIITimeout)
	for {
		var cmd [8]byte
		ctl.Encode(cmd[:])
		binary.LittleEndian.PutUint32(cmd[2:], uint32(word))
		copy(cmd[6:], data)
		if err := r.writeReg(uint16(esc.RegSIIControl), cmd[:]); err != nil {
			return fmt.Errorf("master: %v: SII command %#04x at word %#04x: %w", s, uint16(ctl), word, err)
		}
		st, _, err := r.waitIdle(word)
		if err != nil {
			return fmt.Errorf("master: %v: SII command %#04x at word %#04x: %w", s, uint16(ctl), word, err)
		}
		if !st.Failed() {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("master: %v: SII command %#04x at word %#04x: %w", s, uint16(ctl), word,
				&SIIError{Address: s.StationAddress, Word: word, Status: st})
		}
		m.bus.counters.retries.Add(1)
	}
}

// ReloadEEPROM makes the ESC of s load its configuration area (SII words
// 0–7: PDI, ESC configuration, station alias) again, as at power-up.
func (m *Master) ReloadEEPROM(ctx context.Context, s *Slave) error {
	return m.withEEPROM(ctx, s, func(r *eepromReader) error {
		return m.eepromCommand(ctx, r, s, esc.SIICmdReload, 0, nil)
	})
}

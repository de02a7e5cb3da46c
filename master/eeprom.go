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

// siiWindow is the span of the EEPROM interface read at once while polling:
// control/status (0x0502), address (0x0504) and data (0x0508–0x050F), so
// that the poll that sees "not busy" also brings the data.
const siiWindow = int(esc.RegSIIData-esc.RegSIIControl) + 8

// minSIISize is the least number of EEPROM bytes readSII is prepared to read.
const minSIISize = 2048

// eepromReader reads a slave's SII EEPROM through the ESC's EEPROM
// interface, registers 0x0500–0x050F. It implements sii.WordReader; the
// EEPROM must be assigned to ECAT (0x0500 = 0), which Scan does for all.
type eepromReader struct {
	ctx     context.Context
	bus     *Bus
	station uint16
	// position, when byPosition, addresses the slave by ring position
	// (APRD/APWR) instead of station: a slave that came back with station
	// address 0 is read before anything is written to it.
	position   int
	byPosition bool
	timeout    time.Duration
	retries    int
	readSize   int // 4 or 8 bytes per read command (0x0502 bit 6)
	window     [siiWindow]byte
}

var _ sii.WordReader = (*eepromReader)(nil)

// newEEPROMReader learns the read size of the slave's EEPROM interface.
func newEEPROMReader(ctx context.Context, bus *Bus, station uint16, timeout time.Duration, retries int) (*eepromReader, error) {
	r := &eepromReader{ctx: ctx, bus: bus, station: station, timeout: timeout, retries: retries}
	return r, r.init()
}

// newEEPROMReaderAt is newEEPROMReader for the slave at ring position pos,
// addressed by position.
func newEEPROMReaderAt(ctx context.Context, bus *Bus, pos int, timeout time.Duration, retries int) (*eepromReader, error) {
	r := &eepromReader{ctx: ctx, bus: bus, position: pos, byPosition: true, timeout: timeout, retries: retries}
	return r, r.init()
}

// init learns the read size of the EEPROM interface.
func (r *eepromReader) init() error {
	st, _, err := r.waitIdle(0)
	if err != nil {
		return err
	}
	r.readSize = st.ReadSize()
	return nil
}

// writeReg and readReg access a register of the reader's slave.
func (r *eepromReader) writeReg(ado uint16, data []byte) error {
	if r.byPosition {
		return r.bus.APWR(r.ctx, r.position, ado, data)
	}
	return r.bus.FPWR(r.ctx, r.station, ado, data)
}

func (r *eepromReader) readReg(ado uint16, data []byte) error {
	if r.byPosition {
		return r.bus.APRD(r.ctx, r.position, ado, data)
	}
	return r.bus.FPRD(r.ctx, r.station, ado, data)
}

// ReadWords fills dst with the EEPROM bytes from word address word on.
func (r *eepromReader) ReadWords(word uint16, dst []byte) error {
	for len(dst) > 0 {
		data, err := r.read(word)
		if err != nil {
			return err
		}
		n := copy(dst, data)
		dst = dst[n:]
		word += uint16(n / 2)
	}
	return nil
}

// read runs one read command at word and returns readSize bytes. A command
// error (NACK of the EEPROM) is retried; the next command clears it.
func (r *eepromReader) read(word uint16) ([]byte, error) {
	for try := 0; ; try++ {
		var cmd [6]byte
		esc.SIIControl(esc.SIICmdRead).Encode(cmd[:])
		binary.LittleEndian.PutUint32(cmd[2:], uint32(word))
		if err := r.writeReg(uint16(esc.RegSIIControl), cmd[:]); err != nil {
			return nil, fmt.Errorf("master: slave %#04x: SII read command at word %#04x: %w", r.station, word, err)
		}
		st, window, err := r.waitIdle(word)
		if err != nil {
			return nil, err
		}
		if st.Failed() {
			if try < r.retries {
				r.bus.counters.retries.Add(1)
				continue
			}
			return nil, &SIIError{Address: r.station, Word: word, Status: st}
		}
		return window[siiWindow-8 : siiWindow-8+r.readSize], nil
	}
}

// A busy EEPROM is polled siiQuickPolls times at once, then with
// siiPollPause between polls.
const (
	siiQuickPolls = 4
	siiPollPause  = 100 * time.Microsecond
)

// waitIdle polls the EEPROM interface until it is not busy, returning its
// status and the register window 0x0502–0x050F.
func (r *eepromReader) waitIdle(word uint16) (esc.SIIControl, []byte, error) {
	deadline := time.Now().Add(r.timeout)
	window := r.window[:]
	for polls, expired := 0, false; ; polls++ {
		if err := r.readReg(uint16(esc.RegSIIControl), window); err != nil {
			return 0, nil, fmt.Errorf("master: slave %#04x: SII status: %w", r.station, err)
		}
		st := esc.DecodeSIIControl(window)
		if !st.Busy() {
			return st, window, nil
		}
		if expired {
			return st, nil, &SIIError{Address: r.station, Word: word, Status: st, Busy: true}
		}
		// Past the deadline, read once more: a stalled host may have
		// sent the last poll before the deadline and read its answer
		// after it, so that answer says nothing of the EEPROM now.
		expired = time.Now().After(deadline)
		if !expired && polls >= siiQuickPolls {
			// An EEPROM read takes some 0.3-0.7 ms on real ESCs (the
			// captures in testdata/real-hw): after a few quick polls a
			// pause between them keeps the master from sending hundreds
			// of frames per word, which a simulated segment with a
			// real-time budget (a container's cpu.rt_runtime_us) spent in
			// a fraction of a second.
			time.Sleep(siiPollPause)
		}
	}
}

// prefixReader serves the first bytes of an EEPROM from memory (the header,
// already read to learn the EEPROM size) and the rest from the device.
type prefixReader struct {
	prefix []byte
	r      sii.WordReader
}

// ReadWords serves dst from the prefix as far as it reaches, the rest from
// the device.
func (p prefixReader) ReadWords(word uint16, dst []byte) error {
	from := 2 * int(word)
	if from < len(p.prefix) {
		n := copy(dst, p.prefix[from:])
		dst = dst[n:]
		from += n
	}
	if len(dst) == 0 {
		return nil
	}
	return p.r.ReadWords(uint16(from/2), dst)
}

// readSII reads and parses the SII of the slave at station. A header
// checksum error is logged as a warning and the parsed device returned.
func (m *Master) readSII(ctx context.Context, s *Slave) (*sii.Device, error) {
	r, err := newEEPROMReader(ctx, m.bus, s.StationAddress, m.cfg.SIITimeout, m.cfg.Retries)
	if err != nil {
		return nil, err
	}
	header := make([]byte, sii.HeaderSize)
	if err := r.ReadWords(0, header); err != nil {
		return nil, fmt.Errorf("master: %v: read SII header: %w", s, err)
	}
	// Read no further than the EEPROM the header declares (word 0x3E, KiBit
	// minus one), but at least the 2 KiB most devices have, in case the
	// header is blank or wrong.
	size := max((int(binary.LittleEndian.Uint16(header[0x7C:]))+1)*1024/8, minSIISize)
	img, err := sii.Read(ctx, prefixReader{prefix: header, r: r}, size)
	if err != nil {
		return nil, fmt.Errorf("master: %v: read SII: %w", s, err)
	}
	dev, err := sii.Parse(img)
	var ce *sii.ChecksumError
	if errors.As(err, &ce) && dev != nil {
		m.log.Warn("SII header checksum mismatch, using the image anyway", "slave", s.String(),
			"stored", fmt.Sprintf("%#02x", ce.Got), "computed", fmt.Sprintf("%#02x", ce.Want))
		return dev, nil
	}
	if err != nil {
		return nil, fmt.Errorf("master: %v: parse SII (%d bytes): %w", s, len(img), err)
	}
	return dev, nil
}

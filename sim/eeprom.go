package sim

import (
	"encoding/binary"
	"math/rand/v2"

	"github.com/ecagent/ecagent/ethercat/esc"
	"github.com/ecagent/ecagent/ethercat/sii"
)

// eepromInterface emulates the SII EEPROM interface, registers 0x0500–0x050F
// (ESC datasheet section II, "SII EEPROM interface"): a command written to
// the control register with a word address starts a read, write or reload;
// the interface stays busy for the chip's read time (see siiTiming), then a
// read delivers 8 (or 4) bytes in the data register. With busyFrames set it
// counts frames instead of time (WithSIIBusyFrames).
type eepromInterface struct {
	image      []byte // the EEPROM contents, owned
	idle       uint16 // control/status value when idle (chip dependent)
	extra      uint16 // state dependent bits ORed into the control value
	timing     siiTiming
	busyFrames int        // ≥0: frames a command stays busy after the frame that wrote it; <0: time-based
	doneAt     int64      // time-based: segment time the running command completes
	refuseTill int64      // segment time the EEPROM's own write cycle ends
	busyLeft   int        // frames left (1 while a time-based command runs); 0 when idle
	armed      bool       // the command was written during the current frame
	cmd        uint16     // command in progress (esc.SIICmdRead, …)
	addr       uint32     // word address of the command in progress
	errors     uint16     // sticky error bits of the last command
	badCRC     bool       // the image's header checksum is wrong
	rng        *rand.Rand // the device's generator for the read time (nil: typical)
}

func newEEPROMInterface(image []byte, idle uint16, t siiTiming, busyFrames int) eepromInterface {
	e := eepromInterface{image: image, idle: idle, timing: t, busyFrames: busyFrames}
	e.badCRC = len(image) < sii.HeaderSize || sii.CRC8(image[:0x0E]) != image[0x0E]
	return e
}

// busy reports whether a command is in progress.
func (e *eepromInterface) busy() bool { return e.busyLeft > 0 }

// control returns the value of register 0x0502.
func (e *eepromInterface) control() uint16 {
	v := e.idle | e.extra | e.errors
	if e.badCRC {
		v |= esc.SIIChecksumError
	}
	if e.busy() {
		v |= esc.SIIBusy | e.cmd
	}
	return v
}

// sync stores the interface state in the register file.
func (e *eepromInterface) sync(regs []byte) {
	binary.LittleEndian.PutUint16(regs[esc.RegSIIControl:], e.control())
}

// locked reports whether EtherCAT writes to 0x0502–0x050F are ignored: while
// a command runs, or while the EEPROM is assigned to the PDI (0x0500 bit 0).
func (e *eepromInterface) locked(regs []byte) bool {
	return e.busy() || regs[esc.RegSIIConfig]&0x01 != 0
}

// command handles a write to the command byte 0x0503 at segment time now.
// The register file already holds the written control value, address and
// data.
func (e *eepromInterface) command(regs []byte, now int64) {
	ctl := binary.LittleEndian.Uint16(regs[esc.RegSIIControl:])
	cmd := ctl & esc.SIICmdMask
	addr := binary.LittleEndian.Uint32(regs[esc.RegSIIAddress:])
	e.errors = 0
	switch {
	case cmd == 0:
		// Writing no command clears the error bits.
	case cmd != esc.SIICmdRead && cmd != esc.SIICmdWrite && cmd != esc.SIICmdReload:
		e.errors = esc.SIICommandError
	case cmd == esc.SIICmdWrite && ctl&esc.SIIWriteEnable == 0:
		e.errors = esc.SIICommandError
	case cmd != esc.SIICmdReload && int(addr)*2+2 > len(e.image):
		// The EEPROM does not acknowledge an address beyond its size.
		e.errors = esc.SIICommandError
	case now < e.refuseTill:
		// The EEPROM chip is still writing the last word and does not
		// acknowledge its address: the ESC reports the missing
		// acknowledge (0x0502 bit 13) and carries out nothing.
		e.errors = esc.SIICommandError
	case e.busyFrames >= 0:
		e.cmd, e.addr = cmd, addr
		e.busyLeft, e.armed = e.busyFrames, true
		if e.busyFrames == 0 {
			e.busyLeft = 1
			e.complete(regs)
		}
	default:
		e.cmd, e.addr = cmd, addr
		e.busyLeft = 1
		e.doneAt = now + e.timing.duration(cmd, e.rng)
		if cmd == esc.SIICmdWrite {
			e.refuseTill = now + e.timing.writeCycle
		}
		if e.doneAt <= now {
			e.complete(regs)
		}
	}
	e.sync(regs)
}

// advance completes a time-based command whose time is over at segment
// time now; the segment calls it before a frame reaches the device.
func (e *eepromInterface) advance(regs []byte, now int64) {
	if e.busyFrames < 0 && e.busy() && now >= e.doneAt {
		e.complete(regs)
	}
}

// tick advances a running command by one frame; it completes when its busy
// time is over.
func (e *eepromInterface) tick(regs []byte) {
	if e.busyFrames < 0 || !e.busy() {
		return
	}
	if e.armed {
		e.armed = false
		return
	}
	e.busyLeft--
	if e.busyLeft == 0 {
		e.busyLeft = 1
		e.complete(regs)
	}
}

// complete carries out the command in progress.
func (e *eepromInterface) complete(regs []byte) {
	switch e.cmd {
	case esc.SIICmdRead:
		data := regs[esc.RegSIIData : int(esc.RegSIIData)+e.readBytes()]
		from := int(e.addr) * 2
		for i := range data {
			if from+i < len(e.image) {
				data[i] = e.image[from+i]
			} else {
				data[i] = 0xFF
			}
		}
	case esc.SIICmdWrite:
		at := int(e.addr) * 2
		// The checksum error bit tells the result of the last load of
		// the configuration area (ET1100 datasheet section II, 0x0502
		// bit 11): writing a word does not change it, a reload does.
		copy(e.image[at:at+2], regs[esc.RegSIIData:esc.RegSIIData+2])
	case esc.SIICmdReload:
		e.badCRC = len(e.image) < sii.HeaderSize || sii.CRC8(e.image[:0x0E]) != e.image[0x0E]
		loadConfiguration(regs, e.image)
	}
	e.busyLeft, e.cmd = 0, 0
	e.sync(regs)
}

// loadConfiguration copies the ESC configuration area of the SII (words
// 0–7) into the registers an ESC loads at power-up or on a reload command.
func loadConfiguration(regs, image []byte) {
	if len(image) < 16 {
		return
	}
	le := binary.LittleEndian
	regs[esc.RegPDIControl] = image[0]
	regs[esc.RegESCConfig] = image[1]
	copy(regs[esc.RegPDIConfig:esc.RegPDIConfig+2], image[2:4])
	copy(regs[esc.RegDCPulseLength:esc.RegDCPulseLength+2], image[4:6])
	copy(regs[esc.RegPDIConfig+2:esc.RegPDIConfig+4], image[6:8])
	le.PutUint16(regs[esc.RegStationAlias:], le.Uint16(image[8:]))
}

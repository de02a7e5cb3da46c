package sim

import (
	"math/rand/v2"

	"github.com/ecagent/ecagent/ethercat/esc"
)

// siiTiming is how long an ESC's SII EEPROM interface takes, in ns of
// segment time. A zero read time makes a command complete within the frame
// that issued it (an EEPROM emulated by a microcontroller answers at once).
type siiTiming struct {
	read  span  // from a read (or reload) command to the data being valid
	write int64 // from a write command to the interface reporting idle
	// writeCycle is the EEPROM chip's own write cycle after a write:
	// until it ends the chip does not acknowledge, and the ESC refuses
	// every command with 0x0502 bit 13.
	writeCycle int64
}

// siiI2C is an ESC reading a serial I²C EEPROM (ET1100, ET1200).
//
// Read: the real EK1100 (ET1100), EL2828/EL3004/EL1004 (ET1200) and EL2889
// were still busy 0.668 ms after the command and done 0.753 ms after it, in
// the SOEM and ethercrab captures in testdata/real-hw (times at the middle
// of each frame's send and return, as the replay takes them); the real
// devices of issue 37 took 0.681–0.695 ms.
//
// Write: the ESC hands the word to the EEPROM and reports idle at once;
// the EEPROM then spends its write cycle (about 3.8 ms on the Beckhoff
// terminals issue 16 reports; the ≤ 5 ms tWR of I²C EEPROM datasheets)
// not acknowledging its address, which the ESC reports as an
// acknowledge error (ET1100 datasheet section II, 0x0502 bit 13).
var siiI2C = siiTiming{read: span{681_000, 688_000, 695_000}, write: 0, writeCycle: 3_800_000}

// duration returns how long command cmd keeps the interface busy, drawn
// with r (see span.draw).
func (t siiTiming) duration(cmd uint16, r *rand.Rand) int64 {
	if cmd == esc.SIICmdWrite {
		return t.write
	}
	return t.read.draw(r)
}

// readBytes is how many bytes a read command delivers: 8 when the idle
// value of 0x0502 has bit 6 set, else 4 (ET1100 datasheet section II,
// "SII EEPROM interface": read size).
func (e *eepromInterface) readBytes() int {
	if e.idle&0x0040 != 0 {
		return 8
	}
	return 4
}

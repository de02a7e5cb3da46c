package sim

import (
	"encoding/binary"

	"github.com/ecagent/ecagent/master/esc"
)

// Propagation model of the simulated line, in nanoseconds. A frame reaches
// device k+1 forwardHop after device k; on its way back it enters device k's
// downstream port returnHop after leaving device k+1 and leaves device k
// passDelay later. The last device turns the frame around in turnDelay.
// These give receive times and delays of the size real E-bus terminals show
// (SOEM reports 144 ns and 299 ns for the first two terminals behind an
// EK1100).
const (
	forwardHop = 140
	turnDelay  = 100
	returnHop  = 20
	passDelay  = 50
)

// clock is a device's distributed clock: a free-running local time (the
// simulator's monotonic time plus a per-device power-up offset), the system
// time offset and delay the master writes, and the latched receive times.
type clock struct {
	localBase  int64 // local time when the segment's time was zero
	correction int64 // what the drift control loop has added so far
}

// local returns the device's local time at segment time t.
func (c *clock) local(t int64) uint64 { return uint64(t + c.localBase) }

// system returns the system time at segment time t: local time plus the
// offset in 0x0920 plus the control loop's correction.
func (c *clock) system(regs []byte, t int64) uint64 {
	off := binary.LittleEndian.Uint64(regs[esc.RegDCSystemOffset:])
	return c.local(t) + off + uint64(c.correction)
}

// refreshSystemTime stores the system time at t in 0x0910 for a read.
func (c *clock) refreshSystemTime(regs []byte, t int64) {
	binary.LittleEndian.PutUint64(regs[esc.RegDCSystemTime:], c.system(regs, t))
}

// systemTimeWritten handles a write to 0x0910–0x0917: the written value
// (bytes not written keep the local system time) plus the system time delay
// 0x0928 is compared with the local system time; the difference goes to
// 0x092C (bit 31 set when the local copy is smaller) and small differences
// are corrected, as the ESC's control loop does.
func (c *clock) systemTimeWritten(regs []byte, written []byte, from int, t int64) {
	local := c.system(regs, t)
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], local)
	copy(w[from:], written)
	delay := binary.LittleEndian.Uint32(regs[esc.RegDCSystemDelay:])
	diff := int64(binary.LittleEndian.Uint64(w[:])+uint64(delay)) - int64(local)
	if from+len(written) <= 4 {
		diff = int64(int32(uint32(diff)))
	}
	mag := diff
	var v uint32
	if diff > 0 {
		v = 1 << 31
	} else {
		mag = -diff
	}
	v |= uint32(min(mag, 1<<31-1))
	binary.LittleEndian.PutUint32(regs[esc.RegDCSystemDiff:], v)
	if mag < 100_000 {
		c.correction += diff / 2
	}
	binary.LittleEndian.PutUint64(regs[esc.RegDCSystemTime:], local)
}

// latch stores the receive times of the current frame after a write to
// 0x0900: port 0 (and the processing unit, 0x0918) when it arrived, the
// downstream port when it came back from the devices behind; ports without
// a link keep their values.
func (c *clock) latch(regs []byte, arrival int64, downPort int, back int64, hasBack bool) {
	le := binary.LittleEndian
	le.PutUint32(regs[esc.RegDCRecvTimePort0:], uint32(c.local(arrival)))
	le.PutUint64(regs[esc.RegDCRecvTimeECAT:], c.local(arrival))
	if hasBack {
		le.PutUint32(regs[int(esc.RegDCRecvTimePort0)+4*downPort:], uint32(c.local(back)))
	}
}
